"""Plots: what each draws is the document's figures (ms of its ns), one colour per category in
every plot, and a clear error for a kind the document cannot draw."""

from __future__ import annotations

import sys

import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.colors  # noqa: E402
import matplotlib.pyplot as pyplot  # noqa: E402

import stepcast  # noqa: E402
from stepcast import _plots  # noqa: E402
from conftest import NCCL, RESNET_BEFORE  # noqa: E402

ROWS = [("device", "device_time_by_phase"), ("host (step thread)", "host_time_by_phase")]


@pytest.fixture(scope="module")
def nccl():
    return stepcast.load(NCCL)


@pytest.fixture(scope="module")
def analyses(nccl):
    """Two analyze documents: one host-bound with collectives, one with device lanes on its path."""
    return [nccl.analyze(), stepcast.load(RESNET_BEFORE).analyze()]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    pyplot.close("all")


def ms(ns):
    return ns / 1e6


def hex_colour(rgba):
    return matplotlib.colors.to_hex(rgba)


def tick_labels(axis):
    return [label.get_text() for label in axis.get_ticklabels()]


def bar_rows(ax):
    """Every drawn bar as (row label, category, left, width), from the bar containers."""
    labels = tick_labels(ax.yaxis)
    bars = []
    for container in ax.containers:
        for patch in container:
            row = round(patch.get_y() + patch.get_height() / 2)
            bars.append((labels[row], container.get_label(), patch.get_x(), patch.get_width()))
    return bars


def test_phases_are_the_typical_steps_breakdown(analyses):
    for analysis in analyses:
        typical = analysis["typical_step"]
        ax = analysis.plot("phases")
        assert isinstance(ax, matplotlib.axes.Axes)
        bars = bar_rows(ax)
        expected = {
            (row, phase.replace("_", " ")): ms(ns)
            for row, key in ROWS
            for phase, ns in typical[key].items()
            if ns
        }
        # One bar per non-zero phase of each row, as wide as its time.
        assert len(bars) == len(expected)
        assert {(row, phase): pytest.approx(width) for row, phase, _, width in bars} == expected
        # Each row is stacked without gaps to the typical step's span.
        for row, _ in ROWS:
            row_bars = sorted((left, width) for r, _, left, width in bars if r == row)
            assert row_bars[0][0] == 0
            for (left, width), (next_left, _) in zip(row_bars, row_bars[1:]):
                assert next_left == pytest.approx(left + width)
            assert sum(width for _, width in row_bars) == pytest.approx(ms(typical["span_ns"]))
        assert ax.get_xlabel().endswith("(ms)")
    # The default kind of analyze is the phases.
    assert analyses[0].plot_kinds()[0] == "phases"
    default = bar_rows(analyses[0].plot())
    assert default == bar_rows(analyses[0].plot("phases"))


def test_idle_is_the_device_idle_by_cause(analyses):
    for analysis in analyses:
        by_cause = analysis["typical_step"]["device_idle_by_cause"]
        ax = analysis.plot("idle")
        causes = [(key[: -len("_ns")], ns) for key, ns in by_cause.items() if ns]
        patches = ax.patches
        assert len(patches) == len(causes)
        assert tick_labels(ax.yaxis) == [cause.replace("_", " ") for cause, _ in causes]
        assert [p.get_width() for p in patches] == pytest.approx([ms(ns) for _, ns in causes])
        assert [hex_colour(p.get_facecolor()) for p in patches] == [
            _plots.COLOURS[cause].lower() for cause, _ in causes
        ]


def _expected_lanes(analysis):
    """The critical path's (start, duration) ms by (pid, tid), from the path's first event."""
    events = analysis["critical_path"]
    if all("start_ns" in e for e in events):
        spans = [(e["start_ns"], e["dur_ns"]) for e in events]
    else:
        spans = [(e["ts"] * 1000, e["dur"] * 1000) for e in events]
    origin = min(start for start, _ in spans)
    lanes = {}
    for event, (start, dur) in zip(events, spans):
        lanes.setdefault((event["pid"], event["tid"]), []).append((ms(start - origin), ms(dur)))
    return lanes


def test_timeline_is_the_critical_paths_events(analyses):
    for analysis in analyses:
        ax = analysis.plot("timeline")
        drawn = {}
        for collection in ax.collections:
            for path in collection.get_paths():
                xs = path.vertices[:, 0]
                drawn.setdefault(collection.get_gid(), []).append((xs.min(), xs.max() - xs.min()))
        expected = _expected_lanes(analysis)
        # One band per lane the path visits, labelled as analyze labels its lanes.
        assert tick_labels(ax.yaxis) == list(drawn)
        assert len(drawn) == len(expected)
        step = next(s for s in analysis["steps"] if s["number"] == analysis["analyzed_step"])
        lanes_named = {longest["lane"] for longest in step["critical_path_breakdown"]["longest"]}
        assert lanes_named <= set(drawn)
        # Every event of the path, and nothing else, in its lane (lanes in first-visit order).
        for (label, spans), lane_spans in zip(drawn.items(), expected.values()):
            assert len(spans) == len(lane_spans), label
            flat = [value for span in sorted(spans) for value in span]
            assert flat == pytest.approx([value for span in sorted(lane_spans) for value in span])
        assert ax.get_xlabel().endswith("(ms)")
    # The ResNet step's path runs on the GPU too: its device lane has the device colour.
    ax = analyses[1].plot("timeline")
    device = [c for c in ax.collections if c.get_gid().startswith("GPU ")]
    assert device
    assert {hex_colour(c.get_facecolor()[0]) for c in device} == {_plots.COLOURS["device"].lower()}


def test_scaling_is_the_ddp_sweep(nccl):
    gpus = [1, 2, 4, 8]
    result = nccl.whatif("ddp", gpus=gpus)
    assert result.plot_kinds() == ["scaling"]
    ax = result.plot()
    predicted = [line for line in ax.lines if line.get_label().startswith("predicted")]
    assert len(predicted) == 1
    assert list(predicted[0].get_xdata()) == [point["gpus"] for point in result["sweep"]] == gpus
    assert list(predicted[0].get_ydata()) == pytest.approx(
        [ms(point["predicted_ns"]) for point in result["sweep"]]
    )
    ideal = [line for line in ax.lines if line.get_label().startswith("ideal")]
    assert len(ideal) == 1 and ideal[0].get_linestyle() == "--"
    assert list(ideal[0].get_ydata()) == pytest.approx([ms(result["sweep"][0]["predicted_ns"])] * 2)
    assert ax.get_ylabel() == "step time (ms)"


def test_scaling_draws_a_line_per_network(nccl):
    # At 64 GPUs over 1 Gbps the communication outgrows the host-bound step: the lines differ.
    result = nccl.whatif("ddp", gpus=[1, 8, 16, 64], net=["1Gbps", "100Gbps"])
    assert len({point["predicted_ns"] for point in result["sweep"]}) > 1
    ax = result.plot("scaling")
    predicted = [line for line in ax.lines if line.get_label().startswith("predicted")]
    nets = sorted({config["inter_bus_gb_s"] for config in result["ddp"]["configs"]})
    assert len(predicted) == len(nets) == 2
    for line, net in zip(predicted, nets):
        points = [
            point
            for point, config in zip(result["sweep"], result["ddp"]["configs"])
            if config["inter_bus_gb_s"] == net
        ]
        assert f"{net:g} GB/s" in line.get_label()
        assert list(line.get_xdata()) == [point["gpus"] for point in points]
        assert list(line.get_ydata()) == pytest.approx([ms(p["predicted_ns"]) for p in points])


def test_candidates_are_advises_ranking(nccl):
    advice = nccl.advise()
    ax = advice.plot()
    rows = [c for c in advice["candidates"] if c["speedup"] is not None]
    assert tick_labels(ax.yaxis) == [c["name"] for c in rows]
    bars = sorted(
        (round(p.get_y() + p.get_height() / 2), p.get_x() + p.get_width(), p.get_facecolor())
        for p in ax.patches
    )
    # A bar per candidate, best first (top), each ending at its speedup, coloured by what it
    # changes.
    assert [y for y, _, _ in bars] == list(range(len(rows)))
    for (_, end, facecolor), candidate in zip(bars, rows):
        colour = hex_colour(facecolor)
        assert end == pytest.approx(candidate["speedup"]), candidate["name"]
        kind = "hardware" if candidate["hardware"] else "program"
        assert colour == _plots.COLOURS[kind].lower()
    (bounds,) = [line for line in ax.lines if line.get_label().startswith("bound")]
    expected = [
        (y, c["trust"]["bound_speedup"])
        for y, c in enumerate(rows)
        if c["trust"]["bound_speedup"] is not None
    ]
    assert list(bounds.get_ydata()) == [y for y, _ in expected]
    assert list(bounds.get_xdata()) == pytest.approx([bound for _, bound in expected])
    (useful,) = [line for line in ax.lines if line.get_label().startswith("useful")]
    assert useful.get_xdata()[0] == advice["useful_speedup"]


def test_a_category_has_one_colour_in_every_plot(analyses):
    colours = {}
    for analysis in analyses:
        for container in analysis.plot("phases").containers:
            seen = colours.setdefault(container.get_label().replace(" ", "_"), set())
            seen.update(hex_colour(patch.get_facecolor()) for patch in container)
        ax = analysis.plot("idle")
        for cause, patch in zip(tick_labels(ax.yaxis), ax.patches):
            seen = colours.setdefault(cause.replace(" ", "_"), set())
            seen.add(hex_colour(patch.get_facecolor()))
    # Both traces have backward time and idle time caused by late launches.
    assert "backward" in colours and "host_launch" in colours
    for category, seen in colours.items():
        assert seen == {_plots.COLOURS[category].lower()}, category
    # Within one plot, categories differ in colour.
    containers = analyses[1].plot("phases").containers
    drawn = [hex_colour(container[0].get_facecolor()) for container in containers]
    assert len(set(drawn)) == len(drawn)


def test_a_wrong_kind_names_the_kinds(nccl, analyses):
    with pytest.raises(ValueError, match=r"'scaling'.*\['phases', 'idle', 'timeline'\]"):
        analyses[0].plot("scaling")
    with pytest.raises(ValueError, match=r"\['candidates'\]"):
        nccl.advise().plot("phases")
    # A what-if without a sweep has no plot, and says what would have one.
    amp = nccl.whatif("amp")
    assert amp.plot_kinds() == []
    with pytest.raises(ValueError, match="sweep"):
        amp.plot()
    with pytest.raises(ValueError, match="no plots for a stepcast.replay/1"):
        nccl.replay().plot()


def test_draws_into_the_given_axes(analyses):
    figure, given = pyplot.subplots()
    figures = pyplot.get_fignums()
    assert analyses[0].plot("idle", ax=given) is given
    assert pyplot.get_fignums() == figures
    assert len(given.patches) == sum(
        1 for ns in analyses[0]["typical_step"]["device_idle_by_cause"].values() if ns
    )


def test_without_matplotlib(analyses, monkeypatch):
    for name in [name for name in sys.modules if name.split(".")[0] == "matplotlib"]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    # The kinds need no matplotlib; drawing does, and says how to get it.
    assert analyses[0].plot_kinds() == ["phases", "idle", "timeline"]
    with pytest.raises(ImportError, match=r"pip install matplotlib \(or stepcast\[plot\]\)"):
        analyses[0].plot()


def test_plot_colours_are_the_html_reports(nccl, tmp_path):
    """A category the HTML report's charts also show has the same colour in both (read from the
    legends of the report `trace.report` writes)."""
    import re

    page = tmp_path / "report.html"
    nccl.report(page)
    html = page.read_text()
    legend = {
        label.strip(): colour
        for colour, label in re.findall(r'<li><i style="background:(#[0-9a-f]{6})"></i>([^<]+?) <b>', html)
    }
    shared = {key: legend[key.replace("_", " ")] for key in _plots.COLOURS if key.replace("_", " ") in legend}
    assert {"forward", "backward", "idle", "host_launch"} <= set(shared), sorted(legend)
    for key, colour in shared.items():
        assert _plots.COLOURS[key].lower() == colour, key
