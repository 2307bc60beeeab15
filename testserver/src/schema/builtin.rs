//! The built-in kinds, described in a small DSL (only their non-scalar fields matter), and its parser.

use super::*;

// ---------------------------------------------------------------------------------------
// Built-in kinds. Grammar: `Name {` ... `}` or `Name atomic`; a field line is `name TYPE`
// with TYPE one of: map, map<T>, amap (atomic map), atomic, set, list (atomic),
// listmap(k1,k2=DEFAULT)<T>, T (pointer struct), !T (value struct, always present).
// Scalar fields need no line. Element types default to scalar/deduced.
// ---------------------------------------------------------------------------------------
pub(super) const BUILTIN: &str = r#"
ObjectMeta {
  labels map
  annotations map
  finalizers set
  ownerReferences listmap(uid)<OwnerReference>
  managedFields list
}
OwnerReference {
}
LabelSelector atomic
ObjectReference atomic
ConfigMap {
  metadata !ObjectMeta
  data map
  binaryData map
}
Secret {
  metadata !ObjectMeta
  data map
  stringData map
}
Namespace {
  metadata !ObjectMeta
  spec !NamespaceSpec
  status !NamespaceStatus
}
NamespaceSpec {
  finalizers list
}
NamespaceStatus {
  conditions listmap(type)<Condition>
}
Condition {
}
ServiceAccount {
  metadata !ObjectMeta
  secrets listmap(name)<Empty>
  imagePullSecrets list
}
Empty {
}
Service {
  metadata !ObjectMeta
  spec !ServiceSpec
  status !ServiceStatus
}
ServiceSpec {
  ports listmap(port,protocol=TCP)<ServicePort>
  selector amap
  clusterIPs list
  externalIPs list
  loadBalancerSourceRanges list
  ipFamilies list
  sessionAffinityConfig SessionAffinityConfig
}
ServicePort {
}
SessionAffinityConfig {
  clientIP ClientIPConfig
}
ClientIPConfig {
}
ServiceStatus {
  loadBalancer !LoadBalancerStatus
  conditions listmap(type)<Condition>
}
LoadBalancerStatus {
  ingress list
}
PodTemplateSpec {
  metadata !ObjectMeta
  spec !PodSpec
}
PodSpec {
  volumes listmap(name)<Volume>
  initContainers listmap(name)<Container>
  containers listmap(name)<Container>
  ephemeralContainers listmap(name)<Container>
  imagePullSecrets listmap(name)<Empty>
  tolerations list
  hostAliases listmap(ip)<HostAlias>
  nodeSelector amap
  securityContext PodSecurityContext
  affinity Affinity
  topologySpreadConstraints listmap(topologyKey,whenUnsatisfiable)<TopologySpreadConstraint>
  readinessGates list
  dnsConfig PodDNSConfig
  resourceClaims listmap(name)<Empty>
  schedulingGates listmap(name)<Empty>
  overhead map
  os Empty
  resources ResourceRequirements
}
HostAlias {
  hostnames list
}
TopologySpreadConstraint {
  labelSelector LabelSelector
  matchLabelKeys list
}
PodDNSConfig {
  nameservers list
  searches list
  options list
}
PodSecurityContext {
  seLinuxOptions Empty
  windowsOptions Empty
  supplementalGroups list
  sysctls list
  seccompProfile Empty
  appArmorProfile Empty
}
Affinity {
  nodeAffinity NodeAffinity
  podAffinity PodAffinity
  podAntiAffinity PodAffinity
}
NodeAffinity {
  requiredDuringSchedulingIgnoredDuringExecution atomic
  preferredDuringSchedulingIgnoredDuringExecution list
}
PodAffinity {
  requiredDuringSchedulingIgnoredDuringExecution list
  preferredDuringSchedulingIgnoredDuringExecution list
}
Container {
  command list
  args list
  ports listmap(containerPort,protocol=TCP)<ContainerPort>
  envFrom list
  env listmap(name)<EnvVar>
  resources !ResourceRequirements
  resizePolicy list
  volumeMounts listmap(mountPath)<Empty>
  volumeDevices listmap(devicePath)<Empty>
  livenessProbe Probe
  readinessProbe Probe
  startupProbe Probe
  lifecycle Lifecycle
  securityContext SecurityContext
}
ContainerPort {
}
EnvVar {
  valueFrom EnvVarSource
}
EnvVarSource {
  fieldRef atomic
  resourceFieldRef atomic
  configMapKeyRef atomic
  secretKeyRef atomic
}
ResourceRequirements {
  limits map
  requests map
  claims listmap(name)<Empty>
}
Probe {
  exec ExecAction
  httpGet HTTPGetAction
  tcpSocket Empty
  grpc Empty
}
ExecAction {
  command list
}
HTTPGetAction {
  httpHeaders list
}
Lifecycle {
  postStart LifecycleHandler
  preStop LifecycleHandler
}
LifecycleHandler {
  exec ExecAction
  httpGet HTTPGetAction
  tcpSocket Empty
  sleep Empty
}
SecurityContext {
  capabilities Capabilities
  seLinuxOptions Empty
  windowsOptions Empty
  seccompProfile Empty
  appArmorProfile Empty
}
Capabilities {
  add list
  drop list
}
Volume {
  hostPath Empty
  emptyDir Empty
  secret KeyToPathSource
  configMap KeyToPathSource
  persistentVolumeClaim Empty
  downwardAPI DownwardAPIVolumeSource
  projected ProjectedVolumeSource
  csi CSIVolumeSource
  ephemeral Empty
}
KeyToPathSource {
  items list
}
DownwardAPIVolumeSource {
  items list
}
ProjectedVolumeSource {
  sources list
}
CSIVolumeSource {
  volumeAttributes map
  nodePublishSecretRef atomic
}
Pod {
  metadata !ObjectMeta
  spec !PodSpec
  status !PodStatus
}
PodStatus {
  conditions listmap(type)<Condition>
  podIPs listmap(ip)<Empty>
  hostIPs listmap(ip)<Empty>
  initContainerStatuses list
  containerStatuses list
  ephemeralContainerStatuses list
  resourceClaimStatuses listmap(name)<Empty>
}
Deployment {
  metadata !ObjectMeta
  spec !DeploymentSpec
  status !DeploymentStatus
}
DeploymentSpec {
  selector LabelSelector
  template !PodTemplateSpec
  strategy !DeploymentStrategy
}
DeploymentStrategy {
  rollingUpdate Empty
}
DeploymentStatus {
  conditions listmap(type)<Condition>
}
StatefulSet {
  metadata !ObjectMeta
  spec !StatefulSetSpec
  status !StatefulSetStatus
}
StatefulSetSpec {
  selector LabelSelector
  template !PodTemplateSpec
  volumeClaimTemplates list
  updateStrategy !StatefulSetUpdateStrategy
  persistentVolumeClaimRetentionPolicy Empty
  ordinals Empty
}
StatefulSetUpdateStrategy {
  rollingUpdate Empty
}
StatefulSetStatus {
  conditions listmap(type)<Condition>
}
DaemonSet {
  metadata !ObjectMeta
  spec !DaemonSetSpec
  status !DaemonSetStatus
}
DaemonSetSpec {
  selector LabelSelector
  template !PodTemplateSpec
  updateStrategy !DaemonSetUpdateStrategy
}
DaemonSetUpdateStrategy {
  rollingUpdate Empty
}
DaemonSetStatus {
  conditions listmap(type)<Condition>
}
ReplicaSet {
  metadata !ObjectMeta
  spec !ReplicaSetSpec
  status !DeploymentStatus
}
ReplicaSetSpec {
  selector LabelSelector
  template PodTemplateSpec
}
Job {
  metadata !ObjectMeta
  spec !JobSpec
  status !JobStatus
}
JobSpec {
  selector LabelSelector
  template !PodTemplateSpec
  podFailurePolicy PodFailurePolicy
  successPolicy SuccessPolicy
}
PodFailurePolicy {
  rules list
}
SuccessPolicy {
  rules list
}
JobStatus {
  conditions list
  uncountedTerminatedPods Empty
}
CronJob {
  metadata !ObjectMeta
  spec !CronJobSpec
  status !CronJobStatus
}
CronJobSpec {
  jobTemplate !JobTemplateSpec
}
JobTemplateSpec {
  metadata !ObjectMeta
  spec !JobSpec
}
CronJobStatus {
  active list
}
PersistentVolumeClaim {
  metadata !ObjectMeta
  spec !PersistentVolumeClaimSpec
  status !PersistentVolumeClaimStatus
}
PersistentVolumeClaimSpec {
  accessModes list
  selector LabelSelector
  resources !VolumeResourceRequirements
  dataSource atomic
  dataSourceRef Empty
}
VolumeResourceRequirements {
  limits map
  requests map
}
PersistentVolumeClaimStatus {
  accessModes list
  capacity map
  conditions listmap(type)<Condition>
  allocatedResources map
  allocatedResourceStatuses amap
}
Event {
  metadata !ObjectMeta
  involvedObject !ObjectReference
  source !Empty
  series EventSeries
  related ObjectReference
}
EventSeries {
}
Role {
  metadata !ObjectMeta
  rules list
}
ClusterRole {
  metadata !ObjectMeta
  rules list
  aggregationRule AggregationRule
}
AggregationRule {
  clusterRoleSelectors list
}
RoleBinding {
  metadata !ObjectMeta
  subjects list
  roleRef !Empty
}
ClusterRoleBinding {
  metadata !ObjectMeta
  subjects list
  roleRef !Empty
}
Lease {
  metadata !ObjectMeta
  spec !Empty
}
CustomResourceDefinition {
  metadata !ObjectMeta
  spec !CRDSpec
  status !CRDStatus
}
CRDSpec {
  names !CRDNames
  versions listmap(name)<CRDVersion>
  conversion CRDConversion
}
CRDNames {
  shortNames list
  categories list
}
CRDVersion {
  schema CRDValidation
  subresources CRDSubresources
  additionalPrinterColumns list
  selectableFields list
}
CRDValidation {
}
CRDSubresources {
  status Empty
  scale Empty
}
CRDConversion {
  webhook CRDWebhook
}
CRDWebhook {
  clientConfig Empty
  conversionReviewVersions list
}
CRDStatus {
  conditions listmap(type)<Condition>
  acceptedNames !CRDNames
  storedVersions list
}
"#;

pub(super) struct Parsed {
    pub(super) defs: HashMap<String, Option<Vec<(String, String)>>>,
}

pub(super) fn parse_dsl(src: &str) -> Parsed {
    let mut defs = HashMap::new();
    let mut current: Option<(String, Vec<(String, String)>)> = None;
    for line in src.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line == "}" {
            if let Some((name, fields)) = current.take() {
                defs.insert(name, Some(fields));
            }
        } else if let Some(name) = line.strip_suffix('{') {
            current = Some((name.trim().to_string(), Vec::new()));
        } else if let Some((a, b)) = line.split_once(' ') {
            match current.as_mut() {
                Some((_, fields)) => fields.push((a.to_string(), b.trim().to_string())),
                // `Name atomic` at top level.
                None => {
                    defs.insert(a.to_string(), None);
                }
            }
        }
    }
    Parsed { defs }
}

impl Parsed {
    pub(super) fn named(&self, name: &str) -> Ty {
        match self.defs.get(name) {
            Some(None) => Ty::Atomic,
            Some(Some(fields)) => {
                let mut st = StructTy::default();
                for (fname, spec) in fields {
                    let (ty, nonptr) = self.spec(spec);
                    st.fields.insert(
                        fname.clone(),
                        Field {
                            ty,
                            nonptr,
                            default: None,
                        },
                    );
                }
                Ty::Struct(Arc::new(st))
            }
            None => Ty::Deduced,
        }
    }

    pub(super) fn spec(&self, spec: &str) -> (Ty, bool) {
        let (head, elem) = match spec.split_once('<') {
            Some((h, rest)) => (h, Some(rest.trim_end_matches('>'))),
            None => (spec, None),
        };
        let elem_ty = |default: Ty| elem.map(|e| self.named(e)).unwrap_or(default);
        let ty = match head {
            "map" => Ty::Map(Arc::new(elem_ty(Ty::Scalar))),
            "amap" | "atomic" | "list" => Ty::Atomic,
            "set" => Ty::List(ListKind::Set, Arc::new(Ty::Scalar)),
            h if h.starts_with("listmap(") => {
                let keys = h
                    .trim_start_matches("listmap(")
                    .trim_end_matches(')')
                    .split(',')
                    .map(|k| match k.split_once('=') {
                        Some((k, d)) => (k.to_string(), Some(Value::String(d.to_string()))),
                        None => (k.to_string(), None),
                    })
                    .collect();
                Ty::List(ListKind::Map(keys), Arc::new(elem_ty(Ty::Deduced)))
            }
            h if h.starts_with('!') => return (self.named(&h[1..]), true),
            h => self.named(h),
        };
        (ty, false)
    }
}

pub(super) fn builtins() -> &'static HashMap<String, Ty> {
    static CELL: OnceLock<HashMap<String, Ty>> = OnceLock::new();
    CELL.get_or_init(|| {
        let parsed = parse_dsl(BUILTIN);
        let kinds = [
            "ConfigMap",
            "Secret",
            "Namespace",
            "ServiceAccount",
            "Service",
            "Pod",
            "Deployment",
            "StatefulSet",
            "DaemonSet",
            "ReplicaSet",
            "Job",
            "CronJob",
            "PersistentVolumeClaim",
            "Event",
            "Role",
            "ClusterRole",
            "RoleBinding",
            "ClusterRoleBinding",
            "Lease",
            "CustomResourceDefinition",
        ];
        kinds
            .iter()
            .map(|k| (k.to_string(), parsed.named(k)))
            .collect()
    })
}

/// The type of a built-in kind, or an untyped object with standard metadata.
pub fn builtin(kind: &str) -> Ty {
    builtins().get(kind).cloned().unwrap_or_else(untyped_object)
}

pub(super) fn object_meta() -> Ty {
    match builtin("ConfigMap") {
        Ty::Struct(s) => s
            .fields
            .get("metadata")
            .map(|f| f.ty.clone())
            .unwrap_or(Ty::Deduced),
        _ => Ty::Deduced,
    }
}

pub(super) fn untyped_object() -> Ty {
    let mut st = StructTy {
        preserve_unknown: true,
        ..Default::default()
    };
    st.fields.insert(
        "metadata".into(),
        Field {
            ty: object_meta(),
            nonptr: true,
            default: None,
        },
    );
    Ty::Struct(Arc::new(st))
}
