//! Argo CD's ApplicationSet templating (applicationset/utils `Render`): every string of a
//! template, map keys included, is rendered with a generator's parameters, either by
//! fasttemplate (`{{name}}`, an unknown name left as it is) or, with `goTemplate: true`, by
//! Go's text/template with Sprig (tend's Helm engine), `goTemplateOptions` applied. Pure.

use crate::helm::funcs;
use crate::helm::template::{builtins::exact, CallError, Engine, Value};
use serde_json::{Map, Value as Json};

/// A generator's parameter set: Argo CD's `map[string]any`.
pub type Params = Map<String, Json>;

/// How an ApplicationSet renders its templates.
#[derive(Debug, Clone, PartialEq)]
pub enum Templating {
    /// fasttemplate: `{{ name }}` replaced by the string parameter `name`.
    Fast,
    /// Go's text/template; `missing_key_error` is `missingkey=error`.
    Go { missing_key_error: bool },
}

impl Templating {
    /// `spec.goTemplate` and `spec.goTemplateOptions` of an ApplicationSet.
    pub fn of_spec(spec: &Json) -> Result<Templating, String> {
        if !spec
            .get("goTemplate")
            .and_then(Json::as_bool)
            .unwrap_or(false)
        {
            return Ok(Templating::Fast);
        }
        let mut missing_key_error = false;
        for option in spec
            .get("goTemplateOptions")
            .and_then(Json::as_array)
            .into_iter()
            .flatten()
        {
            match option.as_str() {
                Some("missingkey=error") => missing_key_error = true,
                Some("missingkey=zero" | "missingkey=default" | "missingkey=invalid") => {
                    missing_key_error = false
                }
                other => {
                    return Err(format!(
                        "goTemplateOptions: unknown option {}; Go's text/template knows \
                         missingkey=default|invalid|zero|error",
                        other
                            .map(str::to_string)
                            .unwrap_or_else(|| option.to_string())
                    ))
                }
            }
        }
        Ok(Templating::Go { missing_key_error })
    }

    /// The same templating with `missingkey=error` (how Argo CD resolves a generator's
    /// `values` against another generator's parameters).
    pub fn strict(&self) -> Templating {
        match self {
            Templating::Fast => Templating::Fast,
            Templating::Go { .. } => Templating::Go {
                missing_key_error: true,
            },
        }
    }

    pub fn is_go(&self) -> bool {
        matches!(self, Templating::Go { .. })
    }
}

/// Renders strings with one parameter set (one engine for every string of a template).
pub struct Renderer<'p> {
    params: &'p Params,
    engine: Option<Engine>,
    dot: Value,
    count: usize,
}

impl<'p> Renderer<'p> {
    pub fn new(templating: &Templating, params: &'p Params) -> Renderer<'p> {
        let engine = match templating {
            Templating::Fast => None,
            Templating::Go { missing_key_error } => Some(go_engine(*missing_key_error)),
        };
        Renderer {
            params,
            engine,
            dot: Value::from_json(&Json::Object(params.clone()), true),
            count: 0,
        }
    }

    /// One string, as Argo CD's `Render.Replace`.
    pub fn render(&mut self, text: &str) -> Result<String, String> {
        match &mut self.engine {
            None => fast_replace(text, self.params),
            Some(engine) => {
                if !text.contains("{{") {
                    return Ok(text.to_string());
                }
                self.count += 1;
                let name = format!("t{}", self.count);
                engine
                    .add(&name, text)
                    .map_err(|e| format!("failed to parse template {text}: {}", e.message))?;
                engine
                    .execute(&name, self.dot.clone())
                    .map_err(|e| format!("failed to execute go template {text}: {}", e.message))
            }
        }
    }

    /// Every string and map key of `tree`, rendered.
    pub fn render_tree(&mut self, tree: &Json) -> Result<Json, String> {
        Ok(match tree {
            Json::String(s) => Json::String(self.render(s)?),
            Json::Array(items) => Json::Array(
                items
                    .iter()
                    .map(|i| self.render_tree(i))
                    .collect::<Result<_, _>>()?,
            ),
            Json::Object(map) => {
                let mut out = Map::new();
                for (k, v) in map {
                    if v.is_null() {
                        continue;
                    }
                    let v = self.render_tree(v)?;
                    out.insert(self.render(k)?, v);
                }
                Json::Object(out)
            }
            other => other.clone(),
        })
    }
}

/// fasttemplate with `{{` and `}}`: a tag whose trimmed name is a string parameter is
/// replaced; any other tag is written back as it was.
fn fast_replace(text: &str, params: &Params) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            return Err(format!(
                "invalid template: cannot find end tag=\"}}}}\" in the template={text:?}"
            ));
        };
        let tag = &after[..end];
        match params.get(tag.trim()).and_then(Json::as_str) {
            Some(value) if !tag.trim().is_empty() => out.push_str(value),
            _ => {
                out.push_str("{{");
                out.push_str(tag);
                out.push_str("}}");
            }
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Sprig and Argo CD's own functions; Argo CD removes those that read the environment.
fn go_engine(missing_key_error: bool) -> Engine {
    let mut engine = Engine::new();
    funcs::register(&mut engine);
    funcs::register_random(&mut engine, 0);
    for name in ["env", "expandenv", "getHostByName"] {
        engine.register(name, |_, _| {
            Err("not available in ApplicationSet templates (Argo CD removes it)".into())
        });
    }
    engine.register("normalize", |_, args| {
        let [name] = exact::<1>(args, "normalize")?;
        Ok(Value::str(sanitize_name(&string_arg(&name)?)))
    });
    engine.register("slugify", |_, args| {
        let (max, smart, name) = slugify_args(args)?;
        Ok(Value::str(slugify(&name, max, smart)))
    });
    engine.set_missing_key_error(missing_key_error);
    engine
}

fn string_arg(v: &Value) -> Result<String, CallError> {
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| CallError::from("expected a string"))
}

/// `slugify [maxSize [smartTruncate]] name`.
fn slugify_args(args: Vec<Value>) -> Result<(usize, bool, String), CallError> {
    let n = args.len();
    let mut max = 50usize;
    let mut smart = true;
    let mut name = String::new();
    for (i, arg) in args.iter().enumerate() {
        if i + 1 == n {
            name = string_arg(arg)?;
        } else if i == 0 {
            max = match arg {
                Value::Int(m, _) if *m >= 0 => *m as usize,
                _ => return Err("slugify: the first argument is the maximum size".into()),
            };
        } else if i == 1 {
            smart = arg.truthy();
        } else {
            return Err("slugify takes at most three arguments".into());
        }
    }
    Ok((max, smart, name))
}

/// Argo CD's `SanitizeName`: lower case, anything but `[-a-z0-9.]` a dash, at most 253
/// bytes, dashes and dots trimmed from both ends.
pub fn sanitize_name(name: &str) -> String {
    let mut out: String = name
        .to_lowercase()
        .chars()
        .map(|c| {
            if c == '-' || c == '.' || c.is_ascii_lowercase() || c.is_ascii_digit() {
                c
            } else {
                '-'
            }
        })
        .collect();
    if out.len() > 253 {
        out.truncate(253);
    }
    out.trim_matches(|c| c == '-' || c == '.').to_string()
}

/// gosimple/slug on a sanitized name (ASCII only: a sanitized name has nothing else):
/// runs of anything but letters and digits become one dash, trimmed; longer than `max`
/// is cut, at a dash when `smart`.
fn slugify(name: &str, max: usize, smart: bool) -> String {
    let sanitized = sanitize_name(name);
    let mut slug = String::new();
    for c in sanitized.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            slug.push(c);
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_matches('-').to_string();
    if max == 0 || slug.len() <= max {
        return slug;
    }
    if !smart {
        return slug[..max].trim_end_matches('-').to_string();
    }
    let mut cut = String::new();
    for word in slug.split('-') {
        let next = if cut.is_empty() {
            word.len()
        } else {
            cut.len() + 1 + word.len()
        };
        if next > max {
            break;
        }
        if !cut.is_empty() {
            cut.push('-');
        }
        cut.push_str(word);
    }
    if cut.is_empty() {
        slug[..max].to_string()
    } else {
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: Json) -> Params {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn fasttemplate_replaces_string_parameters_and_keeps_unknown_tags() {
        let p = params(json!({"name": "hub", "metadata.labels.env": "dev", "n": 3}));
        let mut r = Renderer::new(&Templating::Fast, &p);
        assert_eq!(
            r.render("addon-{{ name }}-{{metadata.labels.env}}")
                .unwrap(),
            "addon-hub-dev"
        );
        // Not a string parameter, or unknown: written back unchanged.
        assert_eq!(r.render("{{n}}-{{other}}").unwrap(), "{{n}}-{{other}}");
        assert!(r
            .render("{{name")
            .unwrap_err()
            .contains("cannot find end tag"));
    }

    #[test]
    fn go_templates_use_sprig_and_missingkey_options() {
        let p = params(
            json!({"name": "Hub_One", "metadata": {"labels": {"env": "dev"}, "annotations": {}}}),
        );
        let mut r = Renderer::new(
            &Templating::Go {
                missing_key_error: false,
            },
            &p,
        );
        assert_eq!(
            r.render("{{ .name | normalize }}-{{ .metadata.labels.env | upper }}")
                .unwrap(),
            "hub-one-DEV"
        );
        assert_eq!(r.render("{{ .missing }}").unwrap(), "<no value>");
        assert_eq!(
            r.render(r#"{{ default "LoadBalancer" .metadata.annotations.type }}"#)
                .unwrap(),
            "LoadBalancer"
        );
        // As in Go: a field of a missing map is a nil pointer.
        assert!(r.render("{{ .metadata.nothing.type }}").is_err());
        let mut strict = Renderer::new(
            &Templating::Go {
                missing_key_error: true,
            },
            &p,
        );
        let err = strict.render("{{ .missing }}").unwrap_err();
        assert!(
            err.contains("map has no entry for key \"missing\""),
            "{err}"
        );
        assert!(strict.render("{{ env \"HOME\" }}").is_err());
    }

    #[test]
    fn trees_render_strings_and_keys() {
        let p = params(json!({"env": "dev"}));
        let mut r = Renderer::new(&Templating::Fast, &p);
        let out = r
            .render_tree(&json!({"labels": {"team-{{env}}": "{{env}}"}, "n": 1, "x": null}))
            .unwrap();
        assert_eq!(out, json!({"labels": {"team-dev": "dev"}, "n": 1}));
    }

    #[test]
    fn options_of_a_spec() {
        assert_eq!(Templating::of_spec(&json!({})).unwrap(), Templating::Fast);
        assert_eq!(
            Templating::of_spec(
                &json!({"goTemplate": true, "goTemplateOptions": ["missingkey=error"]})
            )
            .unwrap(),
            Templating::Go {
                missing_key_error: true
            }
        );
        assert!(
            Templating::of_spec(&json!({"goTemplate": true, "goTemplateOptions": ["bogus"]}))
                .is_err()
        );
    }

    #[test]
    fn names_sanitized_and_slugified_as_argo_cd_does() {
        assert_eq!(sanitize_name("-My_App.v1-"), "my-app.v1");
        assert_eq!(slugify("Hello World Again", 50, true), "hello-world-again");
        assert_eq!(slugify("hello-world-again", 12, true), "hello-world");
        assert_eq!(slugify("hello-world-again", 12, false), "hello-world");
    }
}
