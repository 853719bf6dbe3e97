//! Kernel names as people read them in a table: a mangled name demangled, the return type,
//! the namespaces and the argument list dropped, nested template arguments collapsed, and no
//! two different kernels of one column shown as the same text. JSON and CSV keep the full
//! name; only the text tables shorten it.
//!
//! `void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>,
//! at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, ...)` reads
//! `vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, Array<char*, 3>>`.

use std::collections::BTreeMap;

/// A nested template argument list longer than this is shown as `<…>`.
const NESTED_ARGS_MAX: usize = 16;

/// `name` demangled when it is an Itanium C++ symbol (`_Z…`), else as given.
fn demangled(name: &str) -> String {
    if name.starts_with("_Z")
        && let Ok(symbol) = cpp_demangle::Symbol::new(name)
        && let Ok(text) = symbol.demangle()
    {
        return text;
    }
    name.to_string()
}

/// The byte index of the `close` that balances the `open` at `start`, if any.
fn matching(text: &str, start: usize, open: u8, close: u8) -> Option<usize> {
    let mut depth = 0usize;
    for (i, &b) in text.as_bytes().iter().enumerate().skip(start) {
        if b == open {
            depth += 1;
        } else if b == close {
            depth = depth.checked_sub(1)?;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

/// `text` split at `sep` where it is outside every `<…>` and `(…)`.
fn split_top_level<'a>(text: &'a str, sep: &str) -> Vec<&'a str> {
    let bytes = text.as_bytes();
    let (mut angle, mut paren) = (0i32, 0i32);
    let mut parts = Vec::new();
    let mut from = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'<' => angle += 1,
            b'>' => angle -= 1,
            b'(' => paren += 1,
            b')' => paren -= 1,
            _ => {}
        }
        if angle == 0 && paren == 0 && text[i..].starts_with(sep) {
            parts.push(&text[from..i]);
            i += sep.len();
            from = i;
            continue;
        }
        i += 1;
    }
    parts.push(&text[from..]);
    parts
}

/// A qualified name's last component (`a::b::f<T>` → `f<T>`), its template arguments
/// shortened ([`short_arguments`]).
fn last_component(text: &str) -> String {
    let text = text.trim();
    let last = split_top_level(text, "::")
        .into_iter()
        .rfind(|part| !part.trim().is_empty())
        .unwrap_or(text)
        .trim();
    match last.find('<') {
        Some(open) if matching(last, open, b'<', b'>') == Some(last.len() - 1) => {
            let args = &last[open + 1..last.len() - 1];
            format!("{}<{}>", &last[..open], short_arguments(args, true))
        }
        _ => last.to_string(),
    }
}

/// Template arguments, each its last component; an argument's own arguments kept where short
/// (`CUDAFunctor_add<float>`) and collapsed to `<…>` where not (`nested` says whether to look
/// one level deeper).
fn short_arguments(args: &str, nested: bool) -> String {
    split_top_level(args, ",")
        .into_iter()
        .map(|arg| {
            let arg = arg.trim();
            let head = split_top_level(arg, "::")
                .into_iter()
                .rfind(|part| !part.trim().is_empty())
                .unwrap_or(arg)
                .trim();
            match head.find('<') {
                Some(open) if matching(head, open, b'<', b'>') == Some(head.len() - 1) => {
                    let inner = &head[open + 1..head.len() - 1];
                    let inner = if nested {
                        short_arguments(inner, false)
                    } else {
                        inner.to_string()
                    };
                    if nested && inner.chars().count() <= NESTED_ARGS_MAX {
                        format!("{}<{inner}>", &head[..open])
                    } else {
                        format!("{}<…>", &head[..open])
                    }
                }
                _ => head.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The short form of one kernel name (see the module documentation); stable: the same name
/// always reads the same.
pub fn short_name(name: &str) -> String {
    let full = demangled(name);
    let mut text = full.trim();
    if let Some(rest) = text.strip_prefix("void ") {
        text = rest.trim_start();
    }
    // The argument list: a balanced `(…)` that ends the name (not `(anonymous namespace)`).
    if text.ends_with(')') {
        let bytes = text.as_bytes();
        let (mut depth, mut open) = (0i32, None);
        for i in (0..bytes.len()).rev() {
            match bytes[i] {
                b')' => depth += 1,
                b'(' => {
                    depth -= 1;
                    if depth == 0 {
                        open = Some(i);
                        break;
                    }
                }
                _ => {}
            }
        }
        if let Some(open) = open.filter(|&open| open > 0) {
            text = text[..open].trim_end();
        }
    }
    let short = last_component(text);
    if short.is_empty() {
        name.to_string()
    } else {
        short
    }
}

/// `text` within `width` characters: cut in the middle (its head and its tail kept, where
/// kernel names differ) with an ellipsis.
fn fit(text: &str, width: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= width || width < 3 {
        return text.to_string();
    }
    let head = (width - 1) / 2;
    let tail = width - 1 - head;
    let mut out: String = chars[..head].iter().collect();
    out.push('…');
    out.extend(&chars[chars.len() - tail..]);
    out
}

/// `text` within `width` characters cut at its end (a templated name: the function and its
/// first arguments say what it is).
fn fit_head(text: &str, width: usize) -> String {
    if text.chars().count() <= width || width < 2 {
        return text.to_string();
    }
    let mut out: String = text.chars().take(width - 1).collect();
    out.push('…');
    out
}

/// The short names of a table column, within `width` characters each, no two different names
/// shown alike: a templated short name cut at its end, another in its middle; where two
/// different names then read alike, their short names cut in the middle, then their full
/// names, and where those still collide, numbered in the order they come (`#2`, `#3`).
pub fn short_names(names: &[&str], width: usize) -> Vec<String> {
    let short: Vec<String> = names.iter().map(|n| short_name(n)).collect();
    let mut shown: Vec<String> = short
        .iter()
        .map(|s| {
            if s.contains('<') {
                fit_head(s, width)
            } else {
                fit(s, width)
            }
        })
        .collect();
    let fallbacks: [&dyn Fn(usize) -> String; 2] = [&|i| fit(&short[i], width), &|i| {
        fit(&demangled(names[i]), width)
    }];
    for fallback in fallbacks {
        let mut by_text: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, text) in shown.iter().enumerate() {
            by_text.entry(text.clone()).or_default().push(i);
        }
        for rows in by_text.values() {
            let distinct: std::collections::BTreeSet<&str> =
                rows.iter().map(|&i| names[i]).collect();
            if distinct.len() > 1 {
                for &i in rows {
                    shown[i] = fallback(i);
                }
            }
        }
    }
    number_alike(names, &mut shown, width);
    shown
}

/// Op and other plain names within `width` characters each (cut in the middle, namespaces
/// kept: `aten::copy_` says more than `copy_`), no two different names shown alike.
pub fn short_labels(names: &[&str], width: usize) -> Vec<String> {
    let mut shown: Vec<String> = names.iter().map(|name| fit(name, width)).collect();
    number_alike(names, &mut shown, width);
    shown
}

/// Different names still shown alike get numbers in the order they come (`#2`, `#3`).
fn number_alike(names: &[&str], shown: &mut [String], width: usize) {
    let mut seen: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (i, text) in shown.iter_mut().enumerate() {
        let same = seen.entry(text.clone()).or_default();
        let k = match same.iter().position(|n| *n == names[i]) {
            Some(k) => k,
            None => {
                same.push(names[i]);
                same.len() - 1
            }
        };
        if k > 0 {
            let suffix = format!(" #{}", k + 1);
            let room = width.saturating_sub(suffix.chars().count()).max(3);
            *text = format!("{}{suffix}", fit(text, room));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pytorch_elementwise_kernel_keeps_its_functor() {
        let name = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)";
        assert_eq!(
            short_name(name),
            "vectorized_elementwise_kernel<4, CUDAFunctor_add<float>, Array<char*, 3>>"
        );
    }

    #[test]
    fn an_anonymous_namespace_is_no_argument_list() {
        let name = "void at::native::(anonymous namespace)::max_pool_backward_nchw<float, float>(float const*, long, float*)";
        assert_eq!(short_name(name), "max_pool_backward_nchw<float, float>");
        assert_eq!(short_name("aten::add_"), "add_");
        assert_eq!(
            short_name("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
        );
    }

    #[test]
    fn a_mangled_name_is_demangled() {
        // `void cutlass::Kernel<Foo>(Foo::Params)` as nvcc mangles it.
        let name = "_ZN7cutlass6KernelI3FooEEvN3Foo6ParamsE";
        assert_eq!(short_name(name), "Kernel<Foo>");
        // Not a valid symbol: kept.
        assert_eq!(short_name("_Znot_a_symbol"), "_Znot_a_symbol");
    }

    #[test]
    fn different_kernels_never_read_alike() {
        let a = "sm90_xmma_wgrad_indexed_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x32_stage4";
        let b = "sm90_xmma_wgrad_indexed_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nchw_tilesize64x64x32_stage6";
        let c = "void k<float>(int)";
        let d = "void ns::k<float>(float)";
        let shown = short_names(&[a, b, c, d, a], 40);
        assert_ne!(shown[0], shown[1]);
        assert_ne!(shown[2], shown[3]);
        assert_eq!(shown[0], shown[4], "one name reads one way");
        assert!(shown.iter().all(|s| s.chars().count() <= 40), "{shown:?}");
    }

    #[test]
    fn op_names_keep_their_namespace_and_stay_distinct() {
        let long_a = format!("{}::forward_a", "module".repeat(20));
        let long_b = format!("{}::forward_b", "module".repeat(20));
        let shown = short_labels(&["aten::copy_", &long_a, &long_b, &long_a], 30);
        assert_eq!(shown[0], "aten::copy_");
        assert_ne!(shown[1], shown[2]);
        assert_eq!(shown[1], shown[3]);
        assert!(shown.iter().all(|s| s.chars().count() <= 30), "{shown:?}");
    }
}
