//! YAML 1.1 octal file modes. Kubernetes reads manifests as YAML 1.1, where `defaultMode: 0644`
//! is the octal number 420; serde_yaml reads YAML 1.2, where it is not a number. So that a
//! manifest means to tend what it means to kubectl, volume file modes written with a leading
//! zero are read as octal — only there (pod specs' `defaultMode`/`mode`), never in data.

use serde_json::Value;

/// Workload kinds whose `spec` holds a pod spec (directly or in a template).
fn has_pod_spec(api_version: &str, kind: &str) -> bool {
    matches!(
        (api_version, kind),
        ("v1", "Pod" | "PodTemplate" | "ReplicationController")
            | (
                "apps/v1",
                "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet"
            )
            | ("batch/v1", "Job" | "CronJob")
    )
}

/// Rewrite octal-looking `defaultMode`/`mode` strings under `spec` to numbers.
pub fn fix_octal_modes(object: &mut Value) {
    let api_version = object["apiVersion"].as_str().unwrap_or("").to_string();
    let kind = object["kind"].as_str().unwrap_or("").to_string();
    if !has_pod_spec(&api_version, &kind) {
        return;
    }
    if let Some(spec) = object.get_mut("spec") {
        walk(spec);
    }
}

fn walk(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if key == "defaultMode" || key == "mode" {
                    if let Some(mode) = v.as_str().and_then(octal) {
                        *v = Value::from(mode);
                        continue;
                    }
                }
                walk(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(walk),
        _ => {}
    }
}

/// `0644` → 420; anything else (e.g. `"644"`, `"0x1"`, `"rw"`) → None.
fn octal(text: &str) -> Option<i64> {
    let digits = text.strip_prefix("0o").or_else(|| text.strip_prefix('0'))?;
    if digits.is_empty() || digits.len() > 4 || !digits.bytes().all(|b| (b'0'..=b'7').contains(&b))
    {
        return None;
    }
    i64::from_str_radix(digits, 8).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn octal_modes_in_pod_specs_only() {
        let mut deploy = json!({"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{"spec":{"volumes":[
            {"secret":{"defaultMode":"0644","items":[{"key":"a","path":"a","mode":"0400"}]}},
            {"configMap":{"defaultMode":420}}]}}}});
        fix_octal_modes(&mut deploy);
        let volumes = &deploy["spec"]["template"]["spec"]["volumes"];
        assert_eq!(volumes[0]["secret"]["defaultMode"], 420);
        assert_eq!(volumes[0]["secret"]["items"][0]["mode"], 256);
        assert_eq!(volumes[1]["configMap"]["defaultMode"], 420);
        let mut cm = json!({"apiVersion":"v1","kind":"ConfigMap","data":{"mode":"0644"}});
        fix_octal_modes(&mut cm);
        assert_eq!(cm["data"]["mode"], "0644");
        assert_eq!(octal("0o755"), Some(493));
        assert_eq!(octal("644"), None);
        assert_eq!(octal("08"), None);
    }
}
