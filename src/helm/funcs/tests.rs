//! Helm's and Sprig's functions, with the results `helm template` gives.

use crate::helm::template::{Engine, Value};

fn render(src: &str, values: serde_json::Value) -> Result<String, String> {
    let mut engine = Engine::new();
    super::register(&mut engine);
    engine
        .add("chart/templates/t.yaml", src)
        .map_err(|e| e.to_string())?;
    engine
        .execute("chart/templates/t.yaml", Value::from_json_values(&values))
        .map_err(|e| e.to_string())
}

fn ok(src: &str) -> String {
    let values = serde_json::json!({
        "name": "web", "n": 3, "list": ["b", "a", "b"], "map": {"k": "v", "e": ""},
        "labels": {"app": "x", "tier": "front"}
    });
    render(src, values).unwrap_or_else(|e| panic!("{src}: {e}"))
}

#[test]
fn strings() {
    assert_eq!(
        ok(r#"{{ "Hello" | upper }} {{ "A" | lower }} {{ "  x " | trim }}"#),
        "HELLO a x"
    );
    assert_eq!(
        ok(r#"{{ "abcdef" | trunc 3 }} {{ trunc -2 "abcdef" }} {{ "ab-" | trimSuffix "-" }}"#),
        "abc ef ab"
    );
    assert_eq!(
        ok(
            r#"{{ "a.b" | replace "." "-" }} {{ .name | quote }} {{ .name | squote }} {{ quote .missing }}|"#
        ),
        "a-b \"web\" 'web' |"
    );
    assert_eq!(
        ok(r#"{{ contains "e" .name }} {{ hasPrefix "w" .name }} {{ hasSuffix "x" .name }}"#),
        "true true false"
    );
    assert_eq!(
        ok(r#"{{ "a\nb" | indent 2 }}|{{ "a\nb" | nindent 4 }}"#),
        "  a\n  b|\n    a\n    b"
    );
    assert_eq!(
        ok(r#"{{ .n | toString }} {{ .n | int }} {{ "12" | int64 }} {{ 3 | float64 }}"#),
        "3 3 12 3"
    );
    assert_eq!(
        ok(r#"{{ "x" | b64enc }} {{ "abc" | sha256sum | trunc 8 }}"#),
        "eA== ba7816bf"
    );
    assert_eq!(
        ok(r#"{{ regexMatch "^w.b$" .name }} {{ join "," .list }} {{ (split "." "a.b")._1 }}"#),
        "true b,a,b b"
    );
    let err = render(r#"{{ .n | indent 2 }}"#, serde_json::json!({"n": 1})).unwrap_err();
    assert!(
        err.contains("error calling indent: wrong type for value; expected string; got float64"),
        "{err}"
    );
}

#[test]
fn defaults_and_logic() {
    assert_eq!(
        ok(r#"{{ .missing | default "d" }} {{ .name | default "d" }} {{ .map.e | default "e" }}"#),
        "d web e"
    );
    assert_eq!(
        ok(r#"{{ empty .map.e }} {{ empty .list }} {{ coalesce .missing "" "c" }}"#),
        "true false c"
    );
    assert_eq!(
        ok(r#"{{ ternary "y" "n" true }} {{ true | ternary "y" "n" }}"#),
        "y y"
    );
}

#[test]
fn dicts_and_lists() {
    assert_eq!(
        ok(r#"{{ $d := dict "a" 1 "b" "x" }}{{ $_ := set $d "c" 2 }}{{ $d }}"#),
        "map[a:1 b:x c:2]"
    );
    assert_eq!(
        ok(r#"{{ $d := dict "a" 1 }}{{ $_ := unset $d "a" }}{{ hasKey $d "a" }}"#),
        "false"
    );
    assert_eq!(
        ok(r#"{{ keys .labels | join "," }} {{ list 1 "a" }}"#),
        "app,tier [1 a]"
    );
    assert_eq!(
        ok(
            r#"{{ $m := merge (dict "a" 1 "n" (dict "x" 1)) (dict "a" 2 "b" 3 "n" (dict "y" 2)) }}{{ $m }}"#
        ),
        "map[a:1 b:3 n:map[x:1 y:2]]"
    );
    assert_eq!(
        ok(r#"{{ mergeOverwrite (dict "a" 1) (dict "a" 2) }}"#),
        "map[a:2]"
    );
    assert_eq!(
        ok(r#"{{ mustUniq .list }} {{ has "a" .list }} {{ concat .list (list "c") }}"#),
        "[b a] true [b a b c]"
    );
    assert_eq!(
        ok(r#"{{ omit .labels "app" }} {{ pick .labels "app" }}"#),
        "map[tier:front] map[app:x]"
    );
}

#[test]
fn helm_functions() {
    let src = r#"{{- define "chart.name" -}}{{ .name | trunc 63 }}{{- end -}}
name: {{ include "chart.name" . }}
labels:
  {{- toYaml .labels | nindent 2 }}
tpl: {{ tpl "{{ .name }}-{{ .missing }}" . }}
json: {{ toJson .map }}
{{- $y := fromYaml "a: 1\nb: [x]" }}
y: {{ $y.a }} {{ index $y.b 0 }}"#;
    assert_eq!(
        ok(src),
        "name: web\nlabels:\n  app: x\n  tier: front\ntpl: web-\njson: {\"e\":\"\",\"k\":\"v\"}\ny: 1 x"
    );
    let err = render(
        r#"{{ required "set .Values.x" .x }}"#,
        serde_json::json!({}),
    )
    .unwrap_err();
    assert!(
        err.contains("error calling required: set .Values.x"),
        "{err}"
    );
    let err = render("\n{{ fail \"no\" }}", serde_json::json!({})).unwrap_err();
    assert_eq!(
        err,
        "template: chart/templates/t.yaml:2: error calling fail: no"
    );
    let err = render(r#"{{ nosuch 1 }}"#, serde_json::json!({})).unwrap_err();
    assert_eq!(
        err,
        "template: chart/templates/t.yaml:1: function \"nosuch\" not defined"
    );
    assert_eq!(ok(r#"{{ toJson "<a&b>" }}"#), r#""\u003ca\u0026b\u003e""#);
}

#[test]
fn semver_constraints() {
    let check = |c: &str, v: &str| super::strings::semver_compare(c, v).unwrap_or(false);
    assert!(check(">=1.19-0", "v1.33.0"));
    assert!(!check("<1.21-0", "v1.33.0"));
    assert!(check(">=1.20.0, <2.0.0", "1.33.0"));
    assert!(check("~1.33", "1.33.4"));
    assert!(!check("~1.33", "1.34.0"));
    assert!(check("^1.2", "1.9.0"));
    assert!(check("1.33.x", "1.33.7"));
    assert!(check("<1.0 || >=1.30", "1.33.0"));
    assert!(!check(">=1.20", "1.33.0-rc.1"));
}

#[test]
fn files_methods() {
    let files =
        serde_json::json!({"Files": {"f/a.ini": "[a]\nb=1\n", "f/b.conf": "x\ny\n", "g/c": "z"}});
    let out = render(
        r#"{{ (.Files.Glob "f/*").AsSecrets }}|{{ (.Files.Glob "f/*.conf").AsConfig }}|{{ .Files.Lines "f/b.conf" }}|{{ .Files.Lines "nope" }}|{{ .Files.GetBytes "g/c" }}|{{ (.Files.Glob "none/*").AsConfig }}"#,
        files,
    )
    .unwrap();
    assert_eq!(
        out,
        "a.ini: W2FdCmI9MQo=\nb.conf: eAp5Cg==|b.conf: |\n  x\n  y|[x y]|[]|z|{}"
    );
}
