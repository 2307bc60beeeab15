//! Each construct of the language, with the output Go's text/template gives (checked against
//! Go's own exec_test.go cases where they cover it).

use super::value::Value;
use super::Engine;
use std::collections::BTreeMap;

fn data() -> Value {
    let json = serde_json::json!({
        "name": "web",
        "replicas": 3,
        "enabled": true,
        "empty": "",
        "list": ["a", "b", "c"],
        "map": {"z": 1, "a": 2, "m": 3},
        "nested": {"inner": {"value": "deep"}},
        "zero": 0,
        "nothing": null
    });
    Value::from_json(&json, false)
}

fn render(src: &str) -> String {
    try_render(src).unwrap_or_else(|e| panic!("{src}: {e}"))
}

fn try_render(src: &str) -> Result<String, super::TemplateError> {
    let mut engine = Engine::new();
    engine.add("t", src)?;
    engine.execute("t", data())
}

#[test]
fn text_fields_and_missing_keys() {
    assert_eq!(render("hello {{ .name }}!"), "hello web!");
    assert_eq!(render("{{ .nested.inner.value }}"), "deep");
    assert_eq!(render("{{ .missing }}"), "<no value>");
    assert_eq!(render("{{ .nothing }}"), "<no value>");
    assert_eq!(render("{{ . | len }}"), "9");
    let err = try_render("{{ .missing.deeper }}").unwrap_err();
    assert_eq!(err.message, "nil pointer evaluating interface {}.deeper");
    let err = try_render("{{ .name.x }}").unwrap_err();
    assert_eq!(err.message, "can't evaluate field x in type string");
}

#[test]
fn trimming_and_comments() {
    assert_eq!(render("a  {{- .name -}}  b"), "awebb");
    assert_eq!(render("a \n{{- /* note */ -}}\n b"), "ab");
    assert_eq!(render("a {{/* note */}} b"), "a  b");
    assert_eq!(render("{{ 3 -}} x"), "3x");
    assert_eq!(render("{{ -3 }}"), "-3");
}

#[test]
fn variables_and_dollar() {
    assert_eq!(render("{{ $x := .name }}{{ $x }}"), "web");
    assert_eq!(render("{{ $x := 1 }}{{ $x = 2 }}{{ $x }}"), "2");
    assert_eq!(
        render("{{ with .nested }}{{ $.name }}-{{ .inner.value }}{{ end }}"),
        "web-deep"
    );
    assert_eq!(
        render("{{ if true }}{{ $y := 1 }}{{ end }}{{ $x := 2 }}{{ $x }}"),
        "2"
    );
    assert!(try_render("{{ if true }}{{ $y := 1 }}{{ end }}{{ $y }}").is_err());
    assert_eq!(
        render("{{ $v := 1 }}{{ range .list }}{{ $v = . }}{{ end }}{{ $v }}"),
        "c"
    );
}

#[test]
fn if_else_with() {
    assert_eq!(render("{{ if .enabled }}on{{ else }}off{{ end }}"), "on");
    assert_eq!(
        render("{{ if .empty }}x{{ else if .zero }}y{{ else if .list }}z{{ end }}"),
        "z"
    );
    assert_eq!(
        render("{{ with .missing }}x{{ else }}none{{ end }}"),
        "none"
    );
    assert_eq!(
        render("{{ with .missing }}x{{ else with .name }}{{ . }}{{ end }}"),
        "web"
    );
    assert_eq!(render("{{ if .nothing }}x{{ end }}"), "");
    assert_eq!(render("{{ if .map }}{{ .map.a }}{{ end }}"), "2");
}

#[test]
fn range_lists_maps_ints_else_break_continue() {
    assert_eq!(render("{{ range .list }}{{ . }}{{ end }}"), "abc");
    assert_eq!(
        render("{{ range $i, $e := .list }}{{ $i }}={{ $e }} {{ end }}"),
        "0=a 1=b 2=c "
    );
    assert_eq!(
        render("{{ range $k, $v := .map }}{{ $k }}{{ $v }}{{ end }}"),
        "a2m3z1"
    );
    assert_eq!(render("{{ range $v := .map }}{{ $v }}{{ end }}"), "231");
    assert_eq!(
        render("{{ range .missing }}x{{ else }}empty{{ end }}"),
        "empty"
    );
    assert_eq!(render("{{ range 3 }}{{ . }}{{ end }}"), "012");
    assert_eq!(
        render("{{ range .list }}{{ if eq . \"b\" }}{{ continue }}{{ end }}{{ . }}{{ end }}"),
        "ac"
    );
    assert_eq!(
        render("{{ range .list }}{{ if eq . \"b\" }}{{ break }}{{ end }}{{ . }}{{ end }}"),
        "a"
    );
    assert!(try_render("{{ break }}").is_err());
    assert!(try_render("{{ range .name }}{{ end }}").is_err());
}

#[test]
fn define_template_block() {
    let src = r#"{{ define "greet" }}hi {{ . }}{{ end }}{{ template "greet" .name }}|{{ block "b" . }}{{ .replicas }}{{ end }}"#;
    assert_eq!(render(src), "hi web|3");
    assert_eq!(
        render(r#"{{ define "d" }}{{ $ }}{{ end }}{{ template "d" 5 }}"#),
        "5"
    );
    assert_eq!(
        render(r#"{{ define "n" }}[{{ . }}]{{ end }}{{ template "n" }}"#),
        "[<no value>]"
    );
    let err = try_render(r#"{{ template "nope" }}"#).unwrap_err();
    assert!(err.message.contains("no template \"nope\""), "{err}");
}

#[test]
fn and_or_short_circuit_not() {
    assert_eq!(render("{{ and 1 0 2 }}"), "0");
    assert_eq!(render("{{ and 1 2 }}"), "2");
    assert_eq!(render("{{ or 0 \"\" .name }}"), "web");
    assert_eq!(render("{{ or 0 \"\" }}"), "");
    // The missing field on nil would fail if evaluated.
    assert_eq!(render("{{ or .name .missing.x }}"), "web");
    assert_eq!(render("{{ and .missing .missing.x }}"), "<no value>");
    assert_eq!(render("{{ not .empty }} {{ not .list }}"), "true false");
}

#[test]
fn comparisons_follow_go() {
    assert_eq!(
        render("{{ eq .name \"web\" }} {{ eq 1 2 3 1 }} {{ ne 1 2 }}"),
        "true true true"
    );
    assert_eq!(
        render("{{ lt 1 2 }} {{ le 2 2 }} {{ gt \"b\" \"a\" }} {{ ge 1.5 2.5 }}"),
        "true true true false"
    );
    assert_eq!(
        render("{{ eq .missing \"x\" }} {{ eq .missing nil }}"),
        "false true"
    );
    let err = try_render("{{ eq 1 1.0 }}").unwrap_err();
    assert_eq!(
        err.message,
        "error calling eq: incompatible types for comparison"
    );
    assert!(try_render("{{ lt true false }}").is_err());
}

#[test]
fn len_index_slice_print() {
    assert_eq!(
        render("{{ len .list }} {{ len .name }} {{ len .map }}"),
        "3 3 3"
    );
    assert_eq!(render("{{ index .list 1 }} {{ index .map \"z\" }} {{ index . \"nested\" \"inner\" \"value\" }}"), "b 1 deep");
    assert_eq!(render("{{ index .map \"nope\" }}"), "<no value>");
    assert!(try_render("{{ index .list 5 }}").is_err());
    assert_eq!(
        render("{{ slice .list 1 }} {{ slice .name 0 2 }}"),
        "[b c] we"
    );
    assert_eq!(
        render("{{ print 1 2 \"a\" }}|{{ println \"x\" 1 }}|"),
        "1 2a|x 1\n|"
    );
    assert_eq!(
        render("{{ printf \"%s-%d-%v-%q-%t\" .name 3 .list \"q\" true }}"),
        "web-3-[a b c]-\"q\"-true"
    );
    assert_eq!(render("{{ .list }} {{ .map }}"), "[a b c] map[a:2 m:3 z:1]");
    assert_eq!(
        render("{{ 1.5 }} {{ 1e6 }} {{ 0x1F }} {{ 'a' }}"),
        "1.5 1e+06 31 97"
    );
    // Hex floats (a `p` exponent makes a float; `e` is a hex digit).
    assert_eq!(
        render("{{ 0x1p4 }} {{ 0x1.8p1 }} {{ 0x1e }} {{ -0x.8p1 }} {{ 0x1p60 }}"),
        "16 3 30 -1 1.152921504606847e+18"
    );
    assert!(try_render("{{ 0x1.8 }}").is_err());
}

#[test]
fn pipelines_and_parens() {
    assert_eq!(render("{{ .name | printf \"%s!\" }}"), "web!");
    assert_eq!(render("{{ \"a\" | printf \"%s%s\" \"b\" }}"), "ba");
    assert_eq!(
        render("{{ (index .list 0) }}{{ (.nested).inner.value }}"),
        "adeep"
    );
    assert_eq!(render("{{ (printf \"%d\" 3) | len }}"), "1");
    let err = try_render("{{ 3 | 4 }}").unwrap_err();
    assert!(
        err.message.contains("can't give argument to non-function"),
        "{err}"
    );
}

#[test]
fn parse_errors_name_line() {
    let err = try_render("line1\n{{ if .x }}\n{{ nosuchfn 1 }}{{ end }}").unwrap_err();
    assert_eq!(
        (err.line, err.message.as_str()),
        (3, "function \"nosuchfn\" not defined")
    );
    let err = try_render("a\n{{ if .x }}").unwrap_err();
    assert_eq!(err.template, "t");
    assert!(try_render("{{ end }}").is_err());
    assert!(try_render("{{ .x ").is_err());
    assert!(try_render("{{ \"unterminated }}").is_err());
}

#[test]
fn maps_are_shared_like_go_maps() {
    let mut engine = Engine::new();
    engine.register("put", |_, args| {
        if let [Value::Map(m), Value::Str(k), v] = args.as_slice() {
            m.borrow_mut().insert(k.to_string(), v.clone());
        }
        Ok(Value::str(""))
    });
    engine
        .add(
            "t",
            "{{ $m := .nested }}{{ put $m \"k\" 1 }}{{ .nested.k }}",
        )
        .unwrap();
    assert_eq!(engine.execute("t", data()).unwrap(), "1");
    let _ = BTreeMap::<String, Value>::new();
}

#[test]
fn a_field_of_a_nil_pipeline_or_variable_is_nil_but_of_a_missing_key_an_error() {
    assert_eq!(
        render("{{ ((.missing).a).b }}|{{ (.missing).a.b }}"),
        "<no value>|<no value>"
    );
    assert_eq!(render("{{ $x := .missing }}{{ $x.a.b }}"), "<no value>");
    let err = try_render("{{ (.map).missing.b }}").unwrap_err();
    assert!(
        err.message
            .contains("nil pointer evaluating interface {}.b"),
        "{err}"
    );
}

#[test]
fn runaway_recursion_is_an_error_not_a_crash() {
    // A spawned thread's 2 MiB stack, as the renderer's workers have.
    let out = std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(|| {
            try_render(r#"{{ define "r" }}{{ template "r" . }}{{ end }}{{ template "r" . }}"#)
        })
        .map(|h| h.join());
    let result = out
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|_| panic!("panicked"));
    let err = result.unwrap_err();
    assert!(err.message.contains("exceeded max template depth"), "{err}");
}

/// Go's text/template tells a nil `interface{}` (what a map or list holds, and what `range`
/// binds each element as) from its invalid value (what every pipeline gives after it unwraps
/// the interface): a field of the first is "nil pointer evaluating interface {}.x", a field
/// of the second is nothing (exec.go: walkRange, evalPipeline, evalField). Helm runs with
/// `missingkey=zero`, so a missing key of a `map[string]interface{}` is a nil interface too.
#[test]
fn a_field_of_a_nil_range_element_is_a_nil_pointer_error() {
    let nil_x = "nil pointer evaluating interface {}.x";
    for src in [
        // Through the range variable, of a map and of a list, one and two variables.
        "{{ range $k, $v := .m }}{{ $v.x }}{{ end }}",
        "{{ range $v := .m }}{{ $v.x }}{{ end }}",
        "{{ range $i, $v := .l }}{{ $v.x }}{{ end }}",
        // Through dot.
        "{{ range .m }}{{ .x }}{{ end }}",
        "{{ range .l }}{{ .x.y }}{{ end }}",
        // `with` of a nil is false: its else branch keeps the nil element as dot.
        "{{ range .l }}{{ with . }}y{{ else }}{{ .x }}{{ end }}{{ end }}",
        // As a function's argument, and inside `if`.
        "{{ range $v := .l }}{{ print $v.x }}{{ end }}",
        "{{ range $v := .l }}{{ if $v.x }}y{{ end }}{{ end }}",
    ] {
        let err = try_render_with(src, nil_values()).unwrap_err();
        assert_eq!(err.message, nil_x, "{src}");
    }
    // One level down a map element: a missing key is a nil interface as well.
    let err = try_render_with("{{ range .l2 }}{{ .a.x }}{{ end }}", nil_values()).unwrap_err();
    assert_eq!(err.message, nil_x);
    let err =
        try_render_with("{{ range $v := .l2 }}{{ $v.b.x }}{{ end }}", nil_values()).unwrap_err();
    assert_eq!(err.message, nil_x);
}

#[test]
fn a_nil_range_element_unwrapped_by_a_pipeline_is_go_s_invalid_value() {
    for (src, want) in [
        // Printing a nil element: the action's pipeline unwraps it.
        ("{{ range $v := .l }}{{ $v }}{{ end }}", "<no value>"),
        ("{{ range .m }}{{ . }}{{ end }}", "<no value>"),
        // A field of the element that is there, and one that is not.
        (
            "{{ range .l2 }}{{ .a }}|{{ .b }}{{ end }}",
            "<no value>|<no value>",
        ),
        // `($v)` and `$w := $v` are pipelines: their result is the invalid value.
        ("{{ range $v := .l }}{{ ($v).x }}{{ end }}", "<no value>"),
        (
            "{{ range $v := .l }}{{ $w := $v }}{{ $w.x.y }}{{ end }}",
            "<no value>",
        ),
        ("{{ range .l }}{{ (.).x }}{{ end }}", "<no value>"),
        // A template's data comes through a pipeline too.
        (
            "{{ define \"t2\" }}{{ .x }}{{ end }}{{ range .l }}{{ template \"t2\" . }}{{ end }}",
            "<no value>",
        ),
        // Assigning a nil element to an outer variable stores the unwrapped value.
        (
            "{{ $w := 1 }}{{ range .l }}{{ $w = . }}{{ end }}{{ $w.x }}",
            "<no value>",
        ),
        // Elements that are not nil, and keys, are untouched.
        (
            "{{ range $k, $v := .m2 }}{{ $k }}={{ $v.x }};{{ end }}",
            "a=1;",
        ),
    ] {
        assert_eq!(
            try_render_with(src, nil_values()).unwrap_or_else(|e| panic!("{src}: {e}")),
            want,
            "{src}"
        );
    }
}

/// Go's `index` reports a nil first argument (either kind) as "index of untyped nil" and a
/// nil met after a step (a nil or missing element, a nil interface) as "index of nil
/// pointer" (funcs.go: index, indirectInterface, indirect).
#[test]
fn index_tells_untyped_nil_from_a_nil_element() {
    for (src, want) in [
        ("{{ index .m \"a\" \"x\" }}", "index of nil pointer"),
        ("{{ index .m \"missing\" \"x\" }}", "index of nil pointer"),
        ("{{ index .l 0 \"x\" }}", "index of nil pointer"),
        ("{{ index .nothing \"x\" }}", "index of untyped nil"),
        (
            "{{ range $v := .l }}{{ index $v \"x\" }}{{ end }}",
            "index of untyped nil",
        ),
        (
            "{{ range .l }}{{ index . \"x\" }}{{ end }}",
            "index of untyped nil",
        ),
    ] {
        let err = try_render_with(src, nil_values()).unwrap_err();
        assert_eq!(err.message, format!("error calling index: {want}"), "{src}");
    }
    assert_eq!(
        try_render_with(
            "{{ index .m \"a\" }}|{{ index .m2 \"a\" \"x\" }}",
            nil_values()
        )
        .unwrap(),
        "<no value>|1"
    );
}

fn nil_values() -> Value {
    Value::from_json(
        &serde_json::json!({
            "m": {"a": null},
            "l": [null],
            "l2": [{"a": null}],
            "m2": {"a": {"x": 1}},
            "nothing": null
        }),
        false,
    )
}

fn try_render_with(src: &str, data: Value) -> Result<String, super::TemplateError> {
    let mut engine = Engine::new();
    engine.add("t", src)?;
    engine.execute("t", data)
}

/// Go's parser chains fields onto a function too (`print.x`, `now.Year`): the function runs
/// without arguments when the chain is evaluated, so the template parses and only a branch
/// that runs it fails (bitnami's grafana-mimir writes `merge.Values.a .Values.b`).
#[test]
fn fields_of_a_function_result() {
    assert_eq!(render("{{ if false }}{{ len.x }}{{ end }}ok"), "ok");
    let err = try_render("{{ print.x }}").unwrap_err();
    assert_eq!(err.message, "can't evaluate field x in type string");
    let err = try_render("{{ len.x }}").unwrap_err();
    assert!(
        err.message.contains("wrong number of args for len"),
        "{}",
        err.message
    );
    let err = try_render(r#"{{ "a".x }}"#).unwrap_err();
    assert!(err.message.contains("unexpected .x"), "{}", err.message);
}
