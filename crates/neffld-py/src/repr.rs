//! Pieces of the classes' `__repr__`s written as Python writes them:
//! `True`, `(1, 2)`, `['a', 'b']`.

use std::fmt::Display;

/// `True` or `False`.
pub fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// A tuple: `(128, 64)`, `(5,)`, `()`.
pub fn py_tuple<T: Display>(items: &[T]) -> String {
    let parts: Vec<String> = items.iter().map(ToString::to_string).collect();
    match parts.len() {
        1 => format!("({},)", parts[0]),
        _ => format!("({})", parts.join(", ")),
    }
}

/// A list of strings: `['container', 'parse']`.
pub fn py_str_list<S: AsRef<str>>(items: &[S]) -> String {
    let parts: Vec<String> = items
        .iter()
        .map(|s| format!("'{}'", s.as_ref().escape_debug()))
        .collect();
    format!("[{}]", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_as_python_writes_them() {
        assert_eq!(py_bool(true), "True");
        assert_eq!(py_tuple(&[128, 64]), "(128, 64)");
        assert_eq!(py_tuple(&[5]), "(5,)");
        assert_eq!(py_tuple::<u32>(&[]), "()");
        assert_eq!(
            py_str_list(&["container", "parse"]),
            "['container', 'parse']"
        );
    }
}
