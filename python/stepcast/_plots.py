"""Plots of a command's document, drawn with matplotlib (optional: ``pip install matplotlib``, or
``stepcast[plot]``), for ``Result.plot``.

Each plot takes a document (a ``Result``, or the dict it equals) and an optional ``ax``; it draws
into ``ax``, or a new figure when ``ax`` is ``None``, and returns the Axes. Only what the document
holds is drawn: times are its nanoseconds shown as milliseconds, and a part of 0 ns is not drawn.
A category (a phase, a cause of idle time...) has one colour in every plot, ``COLOURS``.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

NS_PER_MS = 1e6

# One colour per category name, never by position, so that a phase or a cause keeps its colour
# whichever other categories a document has; the same colours as the HTML report's charts
# (`crates/stepcast-report/src/html/chart.rs`, `CATEGORY_COLORS`; a test holds them equal),
# from Okabe & Ito's and Tol's palettes, readable with the common colour-vision deficiencies.
_BLUE = "#0072b2"
_ORANGE = "#e69f00"
_GREEN = "#009e73"
_PINK = "#cc79a7"
_SKY = "#56b4e9"
_BLACK = "#000000"
_LIGHT_GREY = "#dddddd"
_GREY = "#999999"
_TAN = "#dfc27d"
_BROWN = "#8c510a"
_INDIGO = "#332288"
_TEAL = "#44aa99"
_DARK_GREY = "#777777"

# By the document's own names (a key less its `_ns`).
COLOURS: Dict[str, str] = {
    # Phases: analyze's `device_time_by_phase` and `host_time_by_phase`.
    "forward": _BLUE,
    "backward": _ORANGE,
    "optimizer": _GREEN,
    "communication": _PINK,
    "data_loading": _SKY,
    "other": _GREY,
    "idle": _LIGHT_GREY,
    # Why the device idled: analyze's `device_idle_by_cause` (`communication` as the phase).
    "host_launch": _TAN,
    "synchronization": _BLACK,
    "other_stream": _TEAL,
    "unexplained": _GREY,
    # Lanes of the critical path: the host's ops and the device's kernels, as the report's
    # timeline colours them.
    "host": _BROWN,
    "device": _INDIGO,
    # advise's candidates.
    "program": _BLUE,
    "hardware": _ORANGE,
}

# A category the table lacks (a name a later schema version adds) is drawn, in a neutral colour.
_UNKNOWN = _DARK_GREY

# Series without a category name (one line per network of a DDP sweep), in this order.
_SERIES = ["#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#117733", "#999933"]


def colour(category: str) -> str:
    """The colour every plot gives ``category`` (a phase, a cause...)."""
    return COLOURS.get(category, _UNKNOWN)


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as pyplot
    except ImportError as error:
        raise ImportError(
            "plots need matplotlib: pip install matplotlib (or stepcast[plot])"
        ) from error
    return pyplot


def _axes(ax: Any, width_in: float, height_in: float) -> Any:
    # Imported even when `ax` is given: the formatters below need it, and the error should be
    # the same either way.
    pyplot = _pyplot()
    if ax is not None:
        return ax
    # Constrained layout keeps long tick labels (candidate names, lanes) inside the figure.
    _, ax = pyplot.subplots(figsize=(width_in, height_in), layout="constrained")
    return ax


def _ms(ns: float) -> float:
    return ns / NS_PER_MS


def _category(key: str) -> str:
    """A document key as its category name: ``host_launch_ns`` is ``host_launch``."""
    return key[: -len("_ns")] if key.endswith("_ns") else key


def _text(category: str) -> str:
    return category.replace("_", " ")


def _base(document: Mapping[str, Any]) -> str:
    return str(document.get("schema", "")).split("/")[0]


# ---- analyze: the typical step's breakdowns ----


def _typical(document: Mapping[str, Any]) -> Tuple[Mapping[str, Any], str]:
    """The typical step's breakdowns and how a title names them."""
    typical = document.get("typical_step")
    if not isinstance(typical, dict):
        raise ValueError(_no_typical(document))
    steps = typical.get("steps_used", [])
    numbers = ", ".join(str(number) for number in steps)
    return typical, f"typical step (mean of step{'s' if len(steps) != 1 else ''} {numbers})"


def _no_typical(document: Mapping[str, Any]) -> Optional[str]:
    if isinstance(document.get("typical_step"), dict):
        return None
    return "the document has no typical step (typical_step is null: no steady step has tasks)"


def phases(document: Mapping[str, Any], ax: Any = None) -> Any:
    """The typical step's span, split by phase twice: what the device ran, and what the step's
    host thread ran (each a stacked horizontal bar that sums to the span, idle included)."""
    typical, which = _typical(document)
    rows = [
        ("device", typical["device_time_by_phase"]),
        ("host (step thread)", typical["host_time_by_phase"]),
    ]
    ax = _axes(ax, 9.0, 3.0)
    left_ns = [0] * len(rows)
    # One call per phase, over the rows where it is non-zero: one legend entry per phase.
    for phase in _keys(parts for _, parts in rows):
        ys: List[int] = []
        widths_ms: List[float] = []
        lefts_ms: List[float] = []
        for row, (_, parts) in enumerate(rows):
            dur_ns = parts.get(phase, 0)
            if not dur_ns:
                continue
            ys.append(row)
            widths_ms.append(_ms(dur_ns))
            lefts_ms.append(_ms(left_ns[row]))
            left_ns[row] += dur_ns
        if ys:
            ax.barh(ys, widths_ms, left=lefts_ms, height=0.6, color=colour(phase),
                    label=_text(phase))
    ax.set_yticks(range(len(rows)), [name for name, _ in rows])
    ax.invert_yaxis()
    ax.set_xlabel("time in the step (ms)")
    ax.set_title(f"Time by phase: {_ms(typical['span_ns']):.1f} ms\n{which}")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=7, frameon=False)
    return ax


def _keys(maps: Any) -> List[str]:
    """The keys of several dicts, in first-seen order (the document's own order)."""
    keys: List[str] = []
    for parts in maps:
        keys.extend(key for key in parts if key not in keys)
    return keys


def idle(document: Mapping[str, Any], ax: Any = None) -> Any:
    """The device's idle time in the typical step, by what the work ending each idle stretch
    waited for (`device_idle_by_cause`), one bar per cause with time."""
    typical, which = _typical(document)
    by_cause = typical["device_idle_by_cause"]
    causes = [(_category(key), dur_ns) for key, dur_ns in by_cause.items() if dur_ns]
    ax = _axes(ax, 8.0, 1.2 + 0.45 * max(len(causes), 1))
    ax.barh(
        range(len(causes)),
        [_ms(dur_ns) for _, dur_ns in causes],
        height=0.6,
        color=[colour(cause) for cause, _ in causes],
    )
    ax.set_yticks(range(len(causes)), [_text(cause) for cause, _ in causes])
    ax.invert_yaxis()
    ax.set_xlabel("device idle time (ms)")
    idle_ms = _ms(sum(by_cause.values()))
    ax.set_title(
        f"Device idle time by cause: {idle_ms:.1f} of {_ms(typical['span_ns']):.1f} ms\n{which}"
    )
    return ax


# ---- analyze: the critical path as recorded events ----


def _no_path(document: Mapping[str, Any]) -> Optional[str]:
    if document.get("critical_path"):
        return None
    return "the document has no critical path (no analyzed step)"


def _lane(event: Mapping[str, Any], device_id: Any, device_word: str) -> Tuple[str, str]:
    """The event's lane for people, as analyze's `longest[].lane` writes it, and its kind.
    Device work has the device index as its pid (docs/json-schema.md, `critical_path[]`)."""
    pid, tid = event["pid"], event["tid"]
    if device_id is not None and pid == device_id:
        # 2021 traces write the stream as `"tid": "stream 7"`.
        stream = tid[len("stream "):] if isinstance(tid, str) and tid.startswith("stream ") else tid
        return f"{device_word} {pid} stream {stream}", "device"
    return f"thread {tid}", "host"


def _event_ns(event: Mapping[str, Any]) -> Tuple[float, float]:
    """The event's start and duration, ns: the document's own `start_ns`/`dur_ns` where it has
    them, else the file's `ts`/`dur` (µs), which only differ from them by the file's origin."""
    if "start_ns" in event and "dur_ns" in event:
        return event["start_ns"], event["dur_ns"]
    return event["ts"] * 1000.0, event["dur"] * 1000.0


def _depths(spans_ns: Sequence[Tuple[float, float]]) -> List[int]:
    """Each span's nesting depth in its lane (0: inside no other), for spans sorted by start,
    outer first. The path's events on a host thread nest: its tasks lie inside the ops and
    annotations around them."""
    open_ends_ns: List[float] = []
    depths: List[int] = []
    for start_ns, dur_ns in spans_ns:
        while open_ends_ns and open_ends_ns[-1] <= start_ns:
            open_ends_ns.pop()
        depths.append(len(open_ends_ns))
        open_ends_ns.append(start_ns + dur_ns)
    return depths


def _path_lanes(document: Mapping[str, Any]) -> Dict[Tuple[str, str], List[Tuple[float, float]]]:
    """The critical path's events by lane (label, kind), as (start, duration) ns from the path's
    first event, sorted by start, outer first; lanes in the order the path first visits them."""
    events = document["critical_path"]
    device = document.get("device") or {}
    runtime = (document.get("trace") or {}).get("runtime")
    device_word = "GPU" if runtime in ("cuda", "rocm") else "device"
    spans_ns = [_event_ns(event) for event in events]
    origin_ns = min(start_ns for start_ns, _ in spans_ns)
    lanes: Dict[Tuple[str, str], List[Tuple[float, float]]] = {}
    for event, (start_ns, dur_ns) in zip(events, spans_ns):
        lane = _lane(event, device.get("id"), device_word)
        lanes.setdefault(lane, []).append((start_ns - origin_ns, dur_ns))
    for spans in lanes.values():
        spans.sort(key=lambda span: (span[0], -span[1]))
    return lanes


def timeline(document: Mapping[str, Any], ax: Any = None) -> Any:
    """The analyzed step's critical path as the recorded events on it, in time from the path's
    first event: one band per thread or stream, nested events one level further down (the ops
    around a host stretch on top, the tasks they ran below). Each band's bars carry the lane's
    label as their ``gid``."""
    if not document.get("critical_path"):
        raise ValueError(_no_path(document))
    lanes = _path_lanes(document)
    depths = {lane: _depths(spans) for lane, spans in lanes.items()}
    # One y unit per nesting level, one between lanes.
    units = sum(max(lane_depths) + 2 for lane_depths in depths.values()) - 1
    ax = _axes(ax, 10.0, 1.8 + 0.14 * units)
    base = 0
    ticks: List[float] = []
    labelled = set()
    for (name, kind), spans in lanes.items():
        levels = max(depths[(name, kind)]) + 1
        for depth in range(levels):
            level_ms = [(_ms(start_ns), _ms(dur_ns))
                        for (start_ns, dur_ns), d in zip(spans, depths[(name, kind)]) if d == depth]
            label = None if kind in labelled else f"{kind} work"
            labelled.add(kind)
            ax.broken_barh(level_ms, (base + depth + 0.05, 0.9), facecolors=colour(kind),
                           label=label, gid=name)
        ticks.append(base + levels / 2)
        base += levels + 1
    ax.set_yticks(ticks, [name for name, _ in lanes])
    ax.set_ylim(base - 1, 0)
    ax.set_xlabel("time from the path's first event (ms)")
    step = document.get("analyzed_step")
    which = f"step {step}" if step is not None else "the whole trace"
    ax.set_title(f"Critical path of {which}: the recorded events on it, by lane")
    # Below the axes: the bars fill the plot's corners.
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, frameon=False)
    return ax


# ---- whatif ddp: the scaling sweep ----


def _no_sweep(document: Mapping[str, Any]) -> Optional[str]:
    if not document.get("sweep"):
        return "the document has no sweep: scaling plots whatif('ddp', gpus=[...])"
    if document.get("declined"):
        return f"the prediction is declined: {document['declined']}"
    return None


def _sweep_series(document: Mapping[str, Any]) -> List[Tuple[Optional[float], List[Mapping]]]:
    """The sweep's points, one series per network bandwidth (`--net`): `ddp.configs` follows
    `sweep` one to one, and only the network varies besides the GPU count."""
    sweep = document["sweep"]
    configs = (document.get("ddp") or {}).get("configs") or []
    nets = [config.get("inter_bus_gb_s") for config in configs]
    if len(nets) != len(sweep) or len(set(nets)) < 2:
        return [(None, list(sweep))]
    series: Dict[Any, List[Mapping]] = {}
    for net, point in zip(nets, sweep):
        series.setdefault(net, []).append(point)
    return list(series.items())


def scaling(document: Mapping[str, Any], ax: Any = None) -> Any:
    """A DDP sweep (``whatif("ddp", gpus=[...])``): the predicted step time by GPU count, one
    line per network, against the ideal of data parallelism, where more GPUs add no time."""
    reason = _no_sweep(document)
    if reason:
        raise ValueError(reason)
    ax = _axes(ax, 7.0, 4.5)
    series = _sweep_series(document)
    for number, (net_gb_s, points) in enumerate(series):
        label = "predicted" if net_gb_s is None else f"predicted, {net_gb_s:g} GB/s between nodes"
        ax.plot(
            [point["gpus"] for point in points],
            [_ms(point["predicted_ns"]) for point in points],
            marker="o",
            color=_SERIES[number % len(_SERIES)],
            label=label,
        )
    gpus = sorted({point["gpus"] for point in document["sweep"]})
    # Each GPU keeps its batch, so ideal scaling keeps the step time of the fewest GPUs.
    ideal_ns = min(p["predicted_ns"] for p in document["sweep"] if p["gpus"] == gpus[0])
    ax.plot(
        [gpus[0], gpus[-1]],
        [_ms(ideal_ns)] * 2,
        linestyle="--",
        color=_BLACK,
        label=f"ideal: the step at {gpus[0]} GPU{'s' if gpus[0] != 1 else ''}",
    )
    recorded = (document.get("ddp") or {}).get("recorded_world_size")
    if recorded:
        ax.plot([recorded], [_ms(document["baseline_ns"])], linestyle="none", marker="*",
                markersize=12, color=_GREY, markeredgecolor=_BLACK,
                label=f"replay as recorded ({recorded} GPUs)")
    _gpu_axis(ax, gpus)
    ax.set_ylim(bottom=0)
    ax.set_ylabel("step time (ms)")
    ax.set_title("Data-parallel scaling: predicted step time")
    ax.legend(fontsize="small")
    return ax


def _gpu_axis(ax: Any, gpus: Sequence[int]) -> None:
    from matplotlib.ticker import NullLocator

    if gpus[-1] > gpus[0]:
        # GPU counts double from one configuration to the next: evenly spaced in log 2.
        ax.set_xscale("log", base=2)
    # Ticks at the counts predicted only, written as counts (not 2^k).
    ax.set_xticks(list(gpus), [str(count) for count in gpus])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("GPUs")


# ---- advise: the candidates ----


def _no_candidates(document: Mapping[str, Any]) -> Optional[str]:
    if any(c.get("speedup") is not None for c in document.get("candidates") or []):
        return None
    if document.get("declined"):
        return f"predictions are declined on this trace: {document['declined']}"
    return "the document has no candidate with a speedup"


def candidates(document: Mapping[str, Any], ax: Any = None) -> Any:
    """advise's candidates, best first: a bar per predicted speedup from 1× (no change), on a
    log scale so that slowdowns and speedups read alike, and the most each can gain (its
    `trust.bound_speedup`) as a marker."""
    reason = _no_candidates(document)
    if reason:
        raise ValueError(reason)
    # A candidate without a speedup (a predicted step of 0 ns) has nothing to draw.
    rows = [c for c in document["candidates"] if c.get("speedup") is not None]
    ax = _axes(ax, 11.0, 1.8 + 0.32 * len(rows))
    for kind in ("program", "hardware"):
        ys = [y for y, candidate in enumerate(rows) if _change(candidate) == kind]
        if ys:
            ax.barh(ys, [rows[y]["speedup"] - 1.0 for y in ys], left=1.0, height=0.6,
                    color=colour(kind), label=f"{kind} change")
    bounded = [(y, c["trust"]["bound_speedup"]) for y, c in enumerate(rows)
               if (c.get("trust") or {}).get("bound_speedup") is not None]
    if bounded:
        ax.plot([bound for _, bound in bounded], [y for y, _ in bounded], linestyle="none",
                marker="|", markersize=14, markeredgewidth=2, color=_BLACK,
                label="bound: the most it can gain")
    ax.axvline(1.0, color=_BLACK, linewidth=0.8)
    useful = document.get("useful_speedup")
    if useful is not None:
        ax.axvline(useful, color=_DARK_GREY, linestyle=":", label=f"useful from {useful:g}×")
    _speedup_axis(ax)
    ax.set_yticks(range(len(rows)), [c["name"] for c in rows])
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_title(
        f"Predicted speedup of each candidate\nagainst the baseline step of "
        f"{_ms(document['baseline_ns']):.1f} ms"
    )
    ax.legend(loc="lower right", fontsize="small")
    return ax


def _change(candidate: Mapping[str, Any]) -> str:
    """What a candidate changes: ``hardware`` where a model of it does, else ``program``."""
    return "hardware" if candidate.get("hardware") else "program"


def _speedup_axis(ax: Any) -> None:
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    # 1, 2, 5 per decade: speedups mostly lie between 1× and 10×, where a log axis has no
    # labelled tick of its own.
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}×"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("predicted speedup (×, log scale)")


# ---- dispatch, for Result.plot ----

Check = Callable[[Mapping[str, Any]], Optional[str]]
Plot = Callable[..., Any]

# Per document (its schema less the version): its kinds, the default first, and what each
# needs of the document (a reason it cannot be drawn, or None).
_KINDS: Dict[str, List[Tuple[str, Plot, Check]]] = {
    "stepcast.analyze": [
        ("phases", phases, _no_typical),
        ("idle", idle, _no_typical),
        ("timeline", timeline, _no_path),
    ],
    "stepcast.whatif": [("scaling", scaling, _no_sweep)],
    "stepcast.advise": [("candidates", candidates, _no_candidates)],
}


def kinds(document: Mapping[str, Any]) -> List[str]:
    """The plot kinds this document can draw, the default first."""
    return [kind for kind, _, check in _KINDS.get(_base(document), []) if check(document) is None]


def plot(document: Mapping[str, Any], kind: Optional[str] = None, ax: Any = None) -> Any:
    """Draws ``kind`` of ``document`` (by default its first kind) and returns the Axes."""
    schema = document.get("schema", "")
    entries = _KINDS.get(_base(document), [])
    if not entries:
        every = "; ".join(f"{base}: {', '.join(k for k, _, _ in e)}" for base, e in _KINDS.items())
        raise ValueError(f"no plots for a {schema} document; plots are for {every}")
    available = kinds(document)
    if kind is None:
        if not available:
            reasons = "; ".join(f"{k}: {check(document)}" for k, _, check in entries)
            raise ValueError(f"nothing to plot in this {schema} document ({reasons})")
        kind = available[0]
    for name, draw, check in entries:
        if name == kind:
            reason = check(document)
            if reason is not None:
                raise ValueError(
                    f"cannot plot {kind!r}: {reason}; this document's plot kinds: {available}"
                )
            return draw(document, ax=ax)
    raise ValueError(
        f"{kind!r} is not a plot of a {schema} document; this document's plot kinds: {available}"
    )
