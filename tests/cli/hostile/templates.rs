//! Templates written to hurt: Go's fmt and integer limits, nesting, values that hold
//! themselves, and the render's budgets of work and memory.

use super::*;

fn config_map(body: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  v: {body}\n")
}

#[test]
fn fmt_widths_and_precisions_past_go_limits_print_go_text() {
    // Precisions Rust's formatter refuses, printed in full as Go does.
    let out = render_template(&config_map(r#"{{ printf "%.70000f" 1.5 | len | quote }}"#));
    out.rendered();
    assert!(out.stdout.contains("v: '70002'"), "{}", out.stdout);
    for verb in ["e", "g", "v"] {
        let out = render_template(&config_map(&format!(
            r#"{{{{ printf "%.65536{verb}" 1.5 | len | quote }}}}"#
        )));
        out.rendered();
    }
    // Go's fmt: a width number past 1e6 ends the verb; a `*` argument past it is BADWIDTH.
    let out = render_template(&config_map(r#"{{ printf "%0999999999d" 1 | quote }}"#));
    out.rendered();
    assert!(
        out.stdout.contains("%!(NOVERB)%!(EXTRA int=1)"),
        "{}",
        out.stdout
    );
    let out = render_template(&config_map(
        r#"{{ printf "%*d|%.*f" 2000000 1 2000000 1.5 | quote }}"#,
    ));
    out.rendered();
    assert!(
        out.stdout.contains("%!(BADWIDTH)1|%!(BADPREC)1.500000"),
        "{}",
        out.stdout
    );
}

#[test]
fn integer_arithmetic_wraps_as_go_does() {
    let out = render_template(&config_map(
        r#"{{ list (div -9223372036854775808 -1) (mod -9223372036854775808 -1) (add 9223372036854775807 1) (mul 9223372036854775807 2) (sub -9223372036854775808 1) | toJson | quote }}"#,
    ));
    out.rendered();
    assert!(
        out.stdout
            .contains("[-9223372036854775808,0,-9223372036854775808,-2,9223372036854775807]"),
        "{}",
        out.stdout
    );
    render_template(&config_map(
        r#"{{ randInt -9223372036854775808 9223372036854775807 }}"#,
    ))
    .rendered();
    render_template(&config_map(
        r#"{{ untilStep 9223372036854775800 9223372036854775807 5 | len }}"#,
    ))
    .rendered();
}

#[test]
fn nesting_past_the_limit_is_refused_not_a_crash() {
    let ifs = "{{ if true }}".repeat(10_000) + &"{{ end }}".repeat(10_000);
    render_template(&ifs).refused_with("nested too deep");
    let parens = format!("{{{{ {}1{} }}}}", "(".repeat(100_000), ")".repeat(100_000));
    render_template(&parens).refused_with("nested too deep");
    let ranges =
        "{{ range list 1 }}{{ with . }}".repeat(3_000) + &"{{ end }}{{ end }}".repeat(3_000);
    render_template(&ranges).refused_with("nested too deep");
    // Even in a template no one calls.
    let unused = format!(
        "{{{{ define \"unused\" }}}}{}{}{{{{ end }}}}",
        "{{ if true }}".repeat(10_000),
        "{{ end }}".repeat(10_000)
    );
    render_template(&unused).refused_with("nested too deep");
}

#[test]
fn values_that_hold_themselves_are_a_cycle_error() {
    for use_it in [
        "toJson $d",
        "toYaml $d",
        "print $d",
        "deepCopy $d | len",
        "eq $d $d",
        "deepEqual $d $d",
        "toString $d",
        "$d",
        "mustToJson $d",
        "toToml $d",
    ] {
        let text = format!(
            "{{{{ $d := dict }}}}{{{{ $_ := set $d \"x\" $d }}}}{}",
            config_map(&format!("{{{{ {use_it} | quote }}}}"))
        );
        render_template(&text).refused_with("cycle");
    }
    // Shared many times over: each level doubles what writing it out makes.
    let text = "{{ $d := dict \"k\" \"0123456789\" }}{{ range until 60 }}{{ $d = dict \"a\" $d \"b\" $d }}{{ end }}"
        .to_string()
        + &config_map("{{ toYaml $d | len }}");
    render_template(&text).refused_with("--helm-max-bytes");
    // A chain built in a loop, deeper than any values file may be.
    let text = "{{ $d := dict }}{{ range until 100000 }}{{ $d = dict \"x\" $d }}{{ end }}"
        .to_string()
        + &config_map("{{ toJson $d | len }}");
    render_template(&text).refused_with("nested more than");
}

#[test]
fn memory_budget_stops_templates_that_grow_without_bound() {
    for body in [
        "{{ range until 100000000 }}x{{ end }}",
        "{{ $s := \"ab\" }}{{ range until 64 }}{{ $s = printf \"%s%s\" $s $s }}{{ end }}{{ len $s }}",
        "{{ repeat 2000000000 \"ab\" | len }}",
        "{{ randAlphaNum 2000000000 | len }}",
        "{{ indent 2000000000 \"a\" | len }}",
        "{{ nindent 2000000000 \"a\" | len }}",
        "{{ printf \"%999999d\" 1 | repeat 100000 | len }}",
        "{{ regexReplaceAll \"a\" (repeat 100000 \"a\") (repeat 10000 \"$0\") | len }}",
        "{{ replace \"a\" (repeat 100000 \"b\") (repeat 100000 \"a\") | len }}",
        "{{ seq 1000000000 | len }}",
        "{{ $l := list }}{{ range until 300000 }}{{ $l = append $l . }}{{ end }}{{ len $l }}",
    ] {
        render_template(&config_map(body)).refused_with("--helm-max-bytes");
    }
}

#[test]
fn work_budget_stops_templates_that_run_without_end() {
    let nested = "{{ $l := until 100000 }}{{ range $l }}{{ range $l }}{{ end }}{{ end }}";
    let out = render_template(&config_map(nested));
    out.refused_with("--helm-max-steps");
    assert!(out.stderr.contains("templates/t.yaml"), "{}", out.stderr);
    let tpl = "{{ define \"loop\" }}{{ range until 1000 }}{{ include \"loop\" $ }}{{ end }}{{ end }}{{ include \"loop\" . }}";
    render_template(&config_map(tpl)).ended_by_itself();
    // A budget raised on the command line lets a larger render through.
    let dir = chart_repo(&[(
        "templates/t.yaml",
        config_map("{{ range until 3000 }}{{ end }}ok").as_bytes(),
    )]);
    render_bounded(dir.path(), &["--helm-max-steps", "1000"]).refused_with("1000 template steps");
    render_bounded(dir.path(), &["--helm-max-steps", "100000"]).rendered();
}
