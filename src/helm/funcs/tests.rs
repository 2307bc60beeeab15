//! Helm's and Sprig's functions, with the results `helm template` gives.

use crate::helm::template::{Engine, Value};

fn render(src: &str, values: serde_json::Value) -> Result<String, String> {
    render_at(0, src, values)
}

/// [`render`] with `now` giving `now` (Unix seconds).
fn render_at(now: i64, src: &str, values: serde_json::Value) -> Result<String, String> {
    let mut engine = Engine::new();
    super::register(&mut engine);
    engine.context().set_now(now);
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
    // An operator apart from its version (kube-prometheus-stack's `>= 1.22-0`).
    assert!(check(">= 1.22-0", "v1.33.0"));
    assert!(!check("< 1.22-0", "v1.33.0"));
    assert!(check(">= 1.20, < 2.0", "1.33.0") && !check(">= 1.20 < 1.30", "1.33.0"));
    assert!(check("1.30 - 1.34", "1.33.0") && !check("1.30 - 1.32", "1.33.0"));
    // Masterminds' rules for constraints with parts left out.
    assert!(check("<=1.32", "1.32.5") && !check("<=1.32", "1.33.0") && check("<=1", "1.99.0"));
    assert!(!check(">1", "1.5.0") && check(">1", "2.0.0") && check(">1.2", "1.3.0"));
    assert!(!check(">1.2", "1.2.9") && check("~1", "1.9.0") && check("*", "3.1.0"));
    assert!(check("1.2", "1.2.7") && !check("1.2", "1.3.0") && check("~1.2.3", "1.2.9"));
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

#[test]
fn int_of_a_string_parses_as_cast_does() {
    assert_eq!(
        ok(
            r#"{{ list (int "0x1A") (int "3.0") (int "3.5") (int "010") (int64 " 4") (int "1_000") (int "-7") | toJson }}"#
        ),
        "[26,3,0,8,0,0,-7]"
    );
    assert_eq!(ok(r#"{{ float64 " 1.5" }}|{{ float64 "1.5" }}"#), "0|1.5");
}

#[test]
fn title_upper_cases_after_any_ascii_separator() {
    assert_eq!(
        ok(r#"{{ title "foo-bar baz_qux a.b 9x" }}"#),
        "Foo-Bar Baz_qux A.B 9x"
    );
}

#[test]
fn merge_skips_nil_and_merge_overwrite_copies_it() {
    assert_eq!(
        ok(r#"{{ merge (dict "a" 1) (dict "z" nil "a" 2) | toJson }}"#),
        r#"{"a":1}"#
    );
    assert_eq!(
        ok(
            r#"{{ mergeOverwrite (dict "a" 1 "b" (dict "c" 1) "s" "x") (dict "a" nil "b" "x" "s" (dict "k" 1)) | toJson }}"#
        ),
        r#"{"a":null,"b":"x","s":"x"}"#
    );
}

#[test]
fn list_functions() {
    assert_eq!(
        ok(
            r#"{{ list (rest (list 1 2 3)) (initial (list 1 2 3)) (reverse (list 1 2 3)) (without (list 1 2 3 2) 2) (chunk 2 (list 1 2 3)) (slice (list 1 2 3) 1) (until -2) (untilStep 0 10 4) | toJson }}"#
        ),
        "[[2,3],[1,2],[3,2,1],[1,3],[[1,2],[3]],[2,3],[0,-1],[0,4,8]]"
    );
    assert_eq!(
        ok(r#"{{ rest list | toJson }}|{{ seq 3 }}|{{ seq 5 1 2 }}|{{ seq 2 -1 }}"#),
        "null|1 2 3||2 1 0 -1"
    );
    assert_eq!(
        ok(
            r#"{{ has 1 (list 1.0) }}|{{ has (list 1) (list (list 1)) }}|{{ list (list 1) (list 1) | uniq | len }}"#
        ),
        "false|true|1"
    );
    assert_eq!(
        ok(r#"{{ pluck "k" .map (dict "k" 2) (dict) | toJson }}|{{ all 1 "a" }}|{{ any 0 "" }}"#),
        r#"["v",2]|true|false"#
    );
    assert_eq!(
        ok(
            r#"{{ deepEqual (dict "a" (list 1)) (dict "a" (list 1)) }}|{{ deepEqual 1 1.0 }}|{{ typeIs "string" .name }}"#
        ),
        "true|false|true"
    );
}

#[test]
fn dig_returns_the_value_at_the_path_or_the_default() {
    let values = serde_json::json!({"a": {"b": {"c": 1}, "n": null}, "s": "x"});
    let r = |src: &str| render(src, values.clone()).unwrap_or_else(|e| panic!("{src}: {e}"));
    assert_eq!(r(r#"{{ dig "a" "b" "c" "d" . }}"#), "1");
    assert_eq!(r(r#"{{ dig "a" "x" "c" "d" . }}"#), "d");
    // A key that is there with null gives null, not the default.
    assert_eq!(r(r#"{{ dig "a" "n" "d" . | toJson }}"#), "null");
    assert!(render(r#"{{ dig "s" "x" "d" . }}"#, values.clone()).is_err());
    assert!(render(r#"{{ dig "a" . }}"#, values).is_err());
}

#[test]
fn string_functions_of_sprig() {
    assert_eq!(
        ok(
            r#"{{ list (camelcase "foo_bar-baz") (snakecase "HTTPServerName") (kebabcase "fooBar") (substr 1 3 "hello") (substr -1 2 "hello") (repeat 2 "ab") (cat "a" nil 1) (nospace " a b ") (abbrev 5 "hello world") (initials "ab cd") (untitle "Ab Cd") (swapcase "aB") | toJson }}"#
        ),
        r#"["FooBarBaz","http_server_name","foo-bar","el","he","abab","a 1","ab","he...","ac","ab cd","Ab"]"#
    );
    assert_eq!(
        ok(
            r#"{{ "hi" | b32enc }}|{{ "NBUQ====" | b32dec }}|{{ adler32sum "abc" }}|{{ plural "one" "many" 2 }}|{{ toDecimal "777" }}"#
        ),
        "NBUQ====|hi|38600999|many|511"
    );
    assert_eq!(
        ok(
            r#"{{ regexFindAll "[0-9]+" "a1b22c333" 2 | toJson }}|{{ regexSplit "," "a,b,c" 2 | toJson }}|{{ regexQuoteMeta "a.b*c-d" }}|{{ regexReplaceAllLiteral "a" "banana" "$1" }}"#
        ),
        r#"["1","22"]|["a","b,c"]|a\.b\*c-d|b$1n$1n$1"#
    );
    assert_eq!(
        ok(
            r#"{{ base "/a/b.txt" }}|{{ dir "/a/b.txt" }}|{{ ext "x/y.tar.gz" }}|{{ clean "a//b/../c/" }}|{{ isAbs "/x" }}|{{ splitn "." 2 "a.b.c" | toJson }}"#
        ),
        r#"b.txt|/a|.gz|a/c|true|{"_0":"a","_1":"b.c"}"#
    );
    assert_eq!(
        ok(r#"{{ html "<a href='x'>&" }}|{{ js "a'b<=" }}"#),
        r#"&lt;a href=&#39;x&#39;&gt;&amp;|a\'b\u003C\u003D"#
    );
}

#[test]
fn float_math_is_decimal() {
    assert_eq!(
        ok(
            r#"{{ list (addf 1.1 2.2) (subf 1 0.9) (mulf 1.5 3) (divf 10 3) (add1f 0.1) (round 3.14159 2) (round 2.5 0) (ceil 1.2) (floor 1.8) (maxf 1 2.5) (minf 1 2.5) | toJson }}"#
        ),
        "[3.3,0.1,4.5,3.3333333333333335,1.1,3.14,3,2,1,2.5,1]"
    );
}

#[test]
fn dates_come_from_the_set_clock() {
    let ok = |src: &str| {
        render_at(1_709_210_096, src, serde_json::json!({}))
            .unwrap_or_else(|e| panic!("{src}: {e}"))
    };
    assert_eq!(
        ok(
            r#"{{ now | date "2006-01-02T15:04:05Z07:00 Mon Jan _2 03:04PM .000 002" }}|{{ now | unixEpoch }}|{{ now | htmlDate }}"#
        ),
        "2024-02-29T12:34:56Z Thu Feb 29 12:34PM .000 060|1709210096|2024-02-29"
    );
    assert_eq!(
        ok(
            r#"{{ toDate "2006-01-02" "2024-03-01" | date "Monday, January 2" }}|{{ dateModify "-1.5h" (toDate "2006-01-02 15:04" "2024-03-01 01:00") | date "2006-01-02 15:04" }}|{{ toDate "2006-01-02" "bad" | date "2006" }}"#
        ),
        "Friday, March 1|2024-02-29 23:30|0001"
    );
    assert_eq!(
        ok(
            r#"{{ duration "3725" }}|{{ duration "0" }}|{{ durationRound "49h" }}|{{ durationRound "2m" }}|{{ ago (toDate "2006-01-02" "2024-02-29") }}"#
        ),
        "1h2m5s|0s|2d|2m|12h34m56s"
    );
}

#[test]
fn json_variants() {
    assert_eq!(
        ok(r#"{{ dict "a" (list 1 (dict)) "<" "&" | toPrettyJson }}"#),
        "{\n  \"\\u003c\": \"\\u0026\",\n  \"a\": [\n    1,\n    {}\n  ]\n}"
    );
    assert_eq!(
        ok(r#"{{ dict "a" "<&>" | toRawJson }}|{{ list "\b" | mustToJson }}"#),
        r#"{"a":"<&>"}|["\b"]"#
    );
    assert_eq!(
        ok(r#"{{ fromJsonArray "[1,\"a\"]" | toJson }}|{{ (mustFromJson "{\"a\":2}").a }}"#),
        r#"[1,"a"]|2"#
    );
}

#[test]
fn random_functions_are_drawn_from_the_seed() {
    let mut engine = Engine::new();
    super::register(&mut engine);
    super::register_random(&mut engine, 7);
    engine
        .add(
            "t",
            r#"{{ uuidv4 }}|{{ randInt 5 6 }}|{{ randBytes 3 | len }}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let out = engine
        .execute("t", Value::Nil)
        .unwrap_or_else(|e| panic!("{e}"));
    let (uuid, rest) = out.split_once('|').unwrap_or_default();
    assert_eq!(uuid.len(), 36);
    assert_eq!(&uuid[14..15], "4");
    assert_eq!(rest, "5|4");
}

/// Go's text/template passes a nil from a pipeline or function (`index` of a missing key)
/// to a map parameter as the nil map, but refuses a nil that a field lookup gave
/// (`.missing`): "wrong type for value; ... got interface {}". Sprig's dict functions take
/// `map[string]interface{}` parameters, so istiod's `mustMergeOverwrite $.Values (index
/// $.Values "pilot")` renders, and `hasKey .Values.missing "x"` fails, in Helm as here.
#[test]
fn nil_map_parameters_follow_go_argument_rules() {
    assert_eq!(
        ok(r#"{{ mustMergeOverwrite (dict "a" 1) (index . "missing") | toJson }}"#),
        r#"{"a":1}"#
    );
    assert_eq!(
        ok(r#"{{ merge (index . "missing") (dict "a" 1) | toJson }}"#),
        r#"{"a":1}"#
    );
    assert_eq!(
        ok(r#"{{ $x := index . "missing" }}{{ merge (dict "a" 1) $x | toJson }}"#),
        r#"{"a":1}"#
    );
    assert_eq!(
        ok(
            r#"{{ hasKey (index . "missing") "a" }} {{ keys (index . "missing") | len }} {{ get (index . "missing") "a" | quote }} {{ pick (index . "missing") "a" | toJson }} {{ pluck "k" .map (index . "missing") | toJson }}"#
        ),
        r#"false 0 "" {} ["v"]"#
    );
    let wrong = "wrong type for value; expected map[string]interface {}; got interface {}";
    for src in [
        r#"{{ merge (dict "a" 1) .missing }}"#,
        r#"{{ hasKey .missing "a" }}"#,
        r#"{{ hasKey .map.missing "a" }}"#,
        r#"{{ keys .missing }}"#,
    ] {
        let err = render(src, serde_json::json!({"map": {}})).unwrap_err();
        assert!(err.contains(wrong), "{src}: {err}");
    }
    let err = render(
        r#"{{ set (index . "missing") "a" 1 }}"#,
        serde_json::json!({}),
    )
    .unwrap_err();
    assert!(err.contains("assignment to entry in nil map"), "{err}");
    // A field chain that starts from an invalid nil stays invalid: no error.
    assert_eq!(ok(r#"{{ hasKey (index . "missing").x "a" }}"#), "false");
    // A nil element `range` bound (as `$v` or dot) is a nil interface; piped, or through
    // `include`, it is unwrapped first.
    for src in [
        r#"{{ range $v := .l }}{{ merge (dict "a" 1) $v }}{{ end }}"#,
        r#"{{ range .l }}{{ hasKey . "a" }}{{ end }}"#,
    ] {
        let err = render(src, serde_json::json!({"l": [null]})).unwrap_err();
        assert!(err.contains(wrong), "{src}: {err}");
    }
    assert_eq!(
        render(
            r#"{{ define "x" }}{{ .a }}{{ end }}{{ range .l }}{{ . | merge (dict "a" 1) | toJson }} {{ include "x" . }}{{ end }}"#,
            serde_json::json!({"l": [null]})
        )
        .unwrap(),
        r#"{"a":1} <no value>"#
    );
}

/// Sprig's regex functions take Go's RE2 syntax; `regexMatch` swallows Go's parse error
/// (false), the others report it.
#[test]
fn regex_functions_take_go_syntax() {
    assert_eq!(
        ok(
            r#"{{ regexMatch "^[\\w-\\.]+$" "redis-ha.default" }} {{ regexMatch "a**" "a" }} {{ regexFind "[\\d-]+" "tel 12-34" }} {{ regexReplaceAll "\\bx" "é x" "y" }}"#
        ),
        "true false 12-34 é y"
    );
    for src in [
        r#"{{ mustRegexMatch "a**" "a" }}"#,
        r#"{{ regexFind "(?=a)" "a" }}"#,
    ] {
        let err = render(src, serde_json::json!({})).unwrap_err();
        assert!(err.contains("error parsing regexp"), "{src}: {err}");
    }
}

#[test]
fn wrap_and_wrap_with_as_goutils() {
    assert_eq!(
        ok(
            r#"{{ wrap 20 "Here is one line of text that is going to be wrapped after 20 columns." }}"#
        ),
        "Here is one line of\ntext that is going\nto be wrapped after\n20 columns."
    );
    let url = "Click here to jump to the commons website - https://commons.apache.org";
    assert_eq!(
        ok(&format!("{{{{ wrap 20 {url:?} }}}}")),
        "Click here to jump\nto the commons\nwebsite -\nhttps://commons.apache.org"
    );
    assert_eq!(
        ok(&format!("{{{{ wrapWith 20 \"<br/>\" {url:?} }}}}")),
        "Click here to jump<br/>to the commons<br/>website -<br/>https://commons.apac<br/>he.org"
    );
    assert_eq!(ok(r#"{{ wrapWith 5 "\t" "Hello World" }}"#), "Hello\tWorld");
    assert_eq!(ok(r#"{{ wrap 10 "" }}|{{ wrap 0 "ab" }}"#), "|ab");
}

/// Go's integer types as Sprig and text/template give them: Sprig's arithmetic, `int64`,
/// `toDecimal` and `fromToml` are int64, `len`, `atoi`, `int`, `until` and literals int,
/// a semver's numbers uint64. Only kinds, types, `%T`-style messages, `deepEqual` and
/// Sprig's `duration` (an int64 only) see the difference.
#[test]
fn integer_types() {
    assert_eq!(
        ok(
            r#"{{ kindOf (add 1 2) }} {{ typeOf (sub 3 1) }} {{ kindOf (int64 "4") }} {{ kindOf (toDecimal "0644") }} {{ kindOf (max 1 2) }} {{ kindOf (biggest 1 2) }}"#
        ),
        "int64 int64 int64 int64 int64 int64"
    );
    assert_eq!(
        ok(
            r#"{{ kindOf (len .list) }} {{ kindOf (atoi "4") }} {{ kindOf (int "4") }} {{ kindOf 4 }} {{ kindOf (first (until 2)) }}"#
        ),
        "int int int int int"
    );
    assert_eq!(
        ok(
            r#"{{ kindOf (semver "1.2.3").Major }} {{ kindOf ("a = 1" | fromToml).a }} {{ kindOf .n }}"#
        ),
        "uint64 int64 float64"
    );
    // eq and lt compare integers of any type by value; deepEqual does not.
    assert_eq!(
        ok(
            r#"{{ eq (add 1 1) 2 }} {{ lt (add 1 1) 3 }} {{ deepEqual (add 1 1) 2 }} {{ deepEqual (add 1 1) (int64 2) }} {{ eq (semver "1.2.3").Major 1 }}"#
        ),
        "true true false true true"
    );
    assert_eq!(
        ok(
            r#"{{ printf "%s" (add 1 2) }} {{ printf "%s" 3 }} {{ duration 90 }} {{ duration (int64 90) }}"#
        ),
        "%!s(int64=3) %!s(int=3) 0s 1m30s"
    );
}

/// chartutil.Values' methods, which Go's text/template calls before it looks a key up:
/// `.Values.AsMap` is the values (cilium's validate.yaml digs into it); `Table` and
/// `PathValue` follow a dotted path with Helm's errors.
#[test]
fn values_methods() {
    let values = serde_json::json!({"Values": {"a": {"b": {"c": 1}}, "s": "x"}});
    let out = render(
        r#"{{ dig "a" "b" "c" 0 .Values.AsMap }}|{{ .Values.Table "a.b" }}|{{ .Values.PathValue "a.b.c" }}|{{ .Values.PathValue "s" }}|{{ (.Values.Table "a").YAML }}"#,
        values.clone(),
    )
    .unwrap();
    assert_eq!(out, "1|map[c:1]|1|x|b:\n  c: 1\n");
    for (src, says) in [
        (
            r#"{{ .Values.Table "a.x" }}"#,
            r#"error calling Table: "x" is not a table"#,
        ),
        (
            r#"{{ .Values.Table "s" }}"#,
            r#"error calling Table: "s" is not a table"#,
        ),
        (
            r#"{{ .Values.PathValue "a.b" }}"#,
            r#"error calling PathValue: "b" is not a value"#,
        ),
        (r#"{{ .Values.PathValue "" }}"#, "YAML path cannot be empty"),
        (
            r#"{{ .Values.Encode }}"#,
            "wrong number of args for Encode: want 1 got 0",
        ),
    ] {
        let err = render(src, values.clone()).unwrap_err();
        assert!(err.contains(says), "{src}: {err}");
    }
}

/// Helm v3.19.5's function map, name by name (pkg/engine/funcs.go: Sprig v3's
/// `TxtFuncMap` less `env` and `expandenv`, plus Helm's own), with Go's builtins: each
/// parses. Names Helm 3.19.5 does not define (Helm 4's `mustToYaml`, `mustToToml`,
/// duration helpers; Sprig's `env`) fail to parse, as `helm template` fails.
#[test]
fn the_function_map_is_helm_3_19_5s() {
    let helm = "
    abbrev abbrevboth add add1 add1f addf adler32sum ago all any append atoi b32dec b32enc 
    b64dec b64enc base bcrypt biggest buildCustomCert camelcase cat ceil chunk clean coalesce 
    compact concat contains date dateInZone dateModify date_in_zone date_modify decryptAES 
    deepCopy deepEqual default derivePassword dict dig dir div divf duration durationRound 
    empty encryptAES ext fail first float64 floor fromJson fromJsonArray fromToml fromYaml 
    fromYamlArray genCA genCAWithKey genPrivateKey genSelfSignedCert genSelfSignedCertWithKey 
    genSignedCert genSignedCertWithKey get getHostByName has hasKey hasPrefix hasSuffix hello 
    htmlDate htmlDateInZone htpasswd include indent initial initials int int64 isAbs join 
    kebabcase keys kindIs kindOf last list lookup lower max maxf merge mergeOverwrite min 
    minf mod mul mulf mustAppend mustChunk mustCompact mustDateModify mustDeepCopy mustFirst 
    mustFromJson mustHas mustInitial mustLast mustMerge mustMergeOverwrite mustPrepend 
    mustRegexFind mustRegexFindAll mustRegexMatch mustRegexReplaceAll 
    mustRegexReplaceAllLiteral mustRegexSplit mustRest mustReverse mustSlice mustToDate 
    mustToJson mustToPrettyJson mustToRawJson mustUniq mustWithout must_date_modify nindent 
    nospace now omit osBase osClean osDir osExt osIsAbs pick pluck plural prepend quote 
    randAlpha randAlphaNum randAscii randBytes randInt randNumeric regexFind regexFindAll 
    regexMatch regexQuoteMeta regexReplaceAll regexReplaceAllLiteral regexSplit repeat 
    replace required rest reverse round semver semverCompare seq set sha1sum sha256sum 
    sha512sum shuffle slice snakecase sortAlpha split splitList splitn squote sub subf substr 
    swapcase ternary title toDate toDecimal toJson toPrettyJson toRawJson toString toStrings 
    toToml toYaml toYamlPretty tpl trim trimAll trimPrefix trimSuffix trimall trunc tuple 
    typeIs typeIsLike typeOf uniq unixEpoch unset until untilStep untitle upper urlJoin 
    urlParse uuidv4 values without wrap wrapWith 
    and or not len index slice print printf println html js urlquery call eq ne lt le gt ge";
    // Every function of a render: the random ones are registered with the render's seed.
    let parse = |name: &str| {
        let mut engine = Engine::new();
        super::register(&mut engine);
        super::register_random(&mut engine, 1);
        let src = format!("{{{{ if false }}}}{{{{ {name} }}}}{{{{ end }}}}");
        engine.add("t", &src).map_err(|e| e.to_string())
    };
    for name in helm.split_whitespace() {
        assert_eq!(parse(name), Ok(()), "{name}");
    }
    for name in [
        "env",
        "expandenv",
        "mustToYaml",
        "mustFromYaml",
        "mustToToml",
        "durationSeconds",
    ] {
        let err = parse(name).unwrap_err();
        assert!(
            err.ends_with(&format!("function \"{name}\" not defined")),
            "{err}"
        );
    }
}

/// Go's `call` (text/template funcs.go): Helm's data holds no function, so it fails as
/// Go's does on nil and on any other value.
#[test]
fn call_fails_as_go_fails_on_helm_data() {
    assert_eq!(ok("{{ hello }}"), "Hello!");
    let err = render("{{ call .missing }}", serde_json::json!({})).unwrap_err();
    assert!(err.ends_with("error calling call: call of nil"), "{err}");
    let err = render("{{ call .n 1 }}", serde_json::json!({"n": 3})).unwrap_err();
    assert!(
        err.ends_with("error calling call: non-function 3 of type float64"),
        "{err}"
    );
}

/// Sprig's times are Go's `time.Time` (sprig date.go): an action prints `Time.String()`,
/// `toJson` writes RFC 3339 (`MarshalJSON`), `kindOf`/`typeOf` say `struct`/`time.Time`,
/// `.Unix`/`.Year` answer, `unixEpoch` takes a time only; a method tend does not model
/// (`.Month`) is an error rather than a guess.
#[test]
fn times_are_go_time_values() {
    let run = |src: &str| render_at(1_000, src, serde_json::json!({}));
    let day = r#"(toDate "2006-01-02" "2021-05-06")"#;
    assert_eq!(
        run(&format!(
            "{{{{ {day} }}}}|{{{{ toJson {day} }}}}|{{{{ {day}.Unix }}}}|{{{{ {day}.Year }}}}|{{{{ dateModify \"90m\" {day} }}}}"
        )),
        Ok("2021-05-06 00:00:00 +0000 UTC|\"2021-05-06T00:00:00Z\"|1620259200|2021|2021-05-06 01:30:00 +0000 UTC".into())
    );
    assert_eq!(
        run(r#"{{ toDate "2006-01-02" "bad" }}|{{ (toDate "2006-01-02" "bad").IsZero }}"#),
        Ok("0001-01-01 00:00:00 +0000 UTC|true".into())
    );
    assert_eq!(
        run(
            r#"{{ now }}|{{ kindOf now }}|{{ typeOf now }}|{{ now | unixEpoch }}|{{ now | date "2006" }}|{{ date "2006" 0 }}"#
        ),
        Ok("1970-01-01 00:16:40 +0000 UTC|struct|time.Time|1000|1970|1970".into())
    );
    // Go's `==` of two times (cilium's hasDuration): equal when the same instant.
    assert_eq!(
        run(
            r#"{{ $now := now }}{{ ne $now ($now | dateModify "1m") }}|{{ eq $now ($now | dateModify "0s") }}|{{ eq (semver "1.0.0") (semver "1.0.0") }}"#
        ),
        Ok("true|true|false".into())
    );
    let err = run("{{ unixEpoch 5 }}").unwrap_err();
    assert!(err.ends_with("expected time.Time; got int"), "{err}");
    assert!(run("{{ now.Month }}").is_err());
    // go-yaml v3 (toYamlPretty) writes structs its own way: refused, named.
    let err = run(r#"{{ toYamlPretty (dict "t" now) }}"#).unwrap_err();
    assert!(err.contains("toYamlPretty of a time.Time"), "{err}");
}
