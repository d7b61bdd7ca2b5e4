//! NodePools and their node classes read as Karpenter reads them; each test
//! names the source it follows (kubernetes-sigs/karpenter "core",
//! aws/karpenter-provider-aws "aws").

use serde_json::{json, Value};

use super::*;
use crate::input::node::LabelValue;
use crate::input::settings::Settings;

fn nodepool(name: &str, class: &str, requirements: Value) -> Value {
    json!({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
        "spec": {"template": {"spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": class},
            "requirements": requirements}}}})
}

fn ec2nodeclass(name: &str, alias: &str) -> Value {
    json!({"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": name},
        "spec": {"role": "KarpenterNodeRole", "amiSelectorTerms": [{"alias": alias}]}})
}

/// (launchable name, os, build, arch) of each entry, or the reason it is blocked.
fn summary(nodes: &[Node]) -> Vec<String> {
    nodes
        .iter()
        .map(|n| match &n.blocked {
            Some(why) => format!("{}: {why}", n.name),
            None => format!(
                "{}: {} {} {}",
                n.name,
                n.os.as_deref().unwrap_or("-"),
                n.windows_build.as_deref().unwrap_or("-"),
                n.architecture.as_deref().unwrap_or("-")
            ),
        })
        .collect()
}

fn linux_and_windows_requirements() -> Value {
    json!([{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
           {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]}])
}

/// aws `pkg/providers/amifamily/windows.go` (a Windows family's AMIs
/// require `kubernetes.io/os=windows` and its `windows-build`), and
/// `pkg/providers/instancetype/types.go`, `getOS` (Windows on amd64 only,
/// Linux for every other family).
#[test]
fn windows_families_launch_windows_on_amd64_with_their_build_others_linux() {
    let objects = vec![
        nodepool(
            "windows2022",
            "windows2022",
            linux_and_windows_requirements(),
        ),
        ec2nodeclass("windows2022", "windows2022@latest"),
        nodepool("default", "default", linux_and_windows_requirements()),
        ec2nodeclass("default", "al2023@latest"),
    ];
    assert_eq!(
        summary(&from_objects(&objects)),
        [
            "NodePool windows2022: windows 10.0.20348 amd64",
            "NodePool default: linux - amd64",
            "NodePool default: linux - arm64",
        ]
    );
    let windows = &from_objects(&objects)[0];
    assert_eq!(windows.count, 0);
    assert!(!windows.exists() && windows.usable());
    assert_eq!(
        windows.label("node.kubernetes.io/windows-build").as_deref(),
        Some("10.0.20348")
    );
    assert_eq!(
        windows.label("karpenter.sh/nodepool").as_deref(),
        Some("windows2022")
    );
    // Negative: a Linux node carries no build.
    let linux = &from_objects(&objects)[1];
    assert_eq!(
        linux.label_value("node.kubernetes.io/windows-build"),
        LabelValue::Known(None)
    );
}

/// aws `pkg/apis/v1/ec2nodeclass.go`, `AMIFamily`: `amiFamily`, else the
/// alias's family (compared without case), else `Custom` (Linux).
#[test]
fn the_family_is_ami_family_else_the_alias_else_custom() {
    let mut explicit = ec2nodeclass("c", "al2023@latest");
    explicit["spec"]["amiFamily"] = json!("Windows2019");
    explicit["spec"]["amiSelectorTerms"] = json!([{"id": "ami-0123456789abcdef0"}]);
    let pool = nodepool("p", "c", json!([]));
    let builds = |class: Value| summary(&from_objects(&[pool.clone(), class]));
    assert_eq!(builds(explicit), ["NodePool p: windows 10.0.17763 amd64"]);
    assert_eq!(
        builds(ec2nodeclass("c", "Windows2025@latest")),
        ["NodePool p: windows 10.0.26100 amd64"]
    );
    let mut custom = ec2nodeclass("c", "");
    custom["spec"]["amiSelectorTerms"] = json!([{"tags": {"team": "x"}}]);
    assert_eq!(
        builds(custom),
        ["NodePool p: linux - amd64", "NodePool p: linux - arm64"]
    );
}

/// core `pkg/scheduling/requirements.go` (requirements and template labels
/// intersect; `nodeclaimtemplate.go`), and aws `types.go` (an arm64 type
/// has no OS under a Windows family, so such a pool launches nothing).
#[test]
fn requirements_and_labels_narrow_what_a_pool_launches() {
    let arm = nodepool(
        "arm64",
        "default",
        json!([{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]),
    );
    let class = ec2nodeclass("default", "al2023@latest");
    assert_eq!(
        summary(&from_objects(&[arm, class.clone()])),
        ["NodePool arm64: linux - arm64"]
    );
    // The beta key is the stable one (core labels.go, NormalizedLabels).
    let mut labelled = nodepool("amd", "default", json!([]));
    labelled["spec"]["template"]["metadata"] =
        json!({"labels": {"beta.kubernetes.io/arch": "amd64"}});
    assert_eq!(
        summary(&from_objects(&[labelled, class.clone()])),
        ["NodePool amd: linux - amd64"]
    );
    // Negative: what the family cannot launch leaves nothing, and says so.
    let windows_on_linux = nodepool(
        "w",
        "default",
        json!([{"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}]),
    );
    let arm_windows = nodepool(
        "aw",
        "win",
        json!([{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]),
    );
    let wrong_build = nodepool(
        "wb",
        "win",
        json!([{"key": "node.kubernetes.io/windows-build", "operator": "In", "values": ["10.0.17763"]}]),
    );
    let objects = [
        windows_on_linux,
        arm_windows,
        wrong_build,
        class,
        ec2nodeclass("win", "windows2022@latest"),
    ];
    let blocked = summary(&from_objects(&objects));
    assert_eq!(blocked.len(), 3);
    assert!(
        blocked
            .iter()
            .all(|b| b.contains("leave nothing its EC2NodeClass")),
        "{blocked:?}"
    );
}

/// core `pkg/controllers/provisioning/provisioner.go` (only Ready pools
/// provision), aws `pkg/cloudprovider/cloudprovider.go` (a class not Ready
/// launches nothing) and `pkg/providers/amifamily/ami.go` (Windows Server
/// 2025 needs EKS 1.35: AMIsReady is False, reason UnsupportedAlias).
#[test]
fn pools_and_classes_that_are_not_ready_launch_nothing_and_say_why() {
    let mut not_ready = nodepool("p", "default", json!([]));
    not_ready["status"] = json!({"conditions": [
        {"type": "Ready", "status": "False", "reason": "NodeClassNotReady"}]});
    let mut no_amis = ec2nodeclass("w25", "windows2025@latest");
    no_amis["status"] = json!({"conditions": [
        {"type": "AMIsReady", "status": "False", "reason": "UnsupportedAlias"},
        {"type": "Ready", "status": "False", "reason": "AMIsNotReady"}]});
    let objects = [
        not_ready,
        ec2nodeclass("default", "al2023@latest"),
        nodepool("windows2025", "w25", json!([])),
        no_amis,
        nodepool("orphan", "gone", json!([])),
    ];
    assert_eq!(
        summary(&from_objects(&objects)),
        [
            "NodePool p: it reports Ready is False (NodeClassNotReady)",
            "NodePool windows2025: its EC2NodeClass w25 reports AMIsReady is False (UnsupportedAlias)",
            "NodePool orphan: its EC2NodeClass gone does not exist",
        ]
    );
    // Negative: conditions that are True, or no status yet, launch.
    let mut ready = nodepool("p", "default", json!([]));
    ready["status"] = json!({"conditions": [{"type": "Ready", "status": "True"}]});
    let launched = from_objects(&[ready, ec2nodeclass("default", "al2023@latest")]);
    assert!(launched.iter().all(Node::usable));
    assert!(launched
        .iter()
        .all(|n| n.runs(&crate::vocab::constraint::Placement::linux())));
}

/// EKS Auto Mode launches Linux only (EKS user guide, "Create a Node
/// Pool", unsupported labels `kubernetes.io/os`, `windows-build`).
#[test]
fn auto_mode_launches_linux_only() {
    let pool = json!({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "general-purpose"},
        "spec": {"template": {"spec": {"nodeClassRef": {"group": "eks.amazonaws.com", "kind": "NodeClass", "name": "default"},
            "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}}}});
    let class = json!({"apiVersion": "eks.amazonaws.com/v1", "kind": "NodeClass", "metadata": {"name": "default"}});
    assert_eq!(
        summary(&from_objects(&[pool.clone(), class])),
        ["NodePool general-purpose: linux - amd64"]
    );
    // Negative: its class missing, it launches nothing.
    assert_eq!(
        summary(&from_objects(&[pool])),
        ["NodePool general-purpose: its NodeClass default does not exist"]
    );
}

/// core `pkg/apis/v1/nodepool.go`: the template's taints are the nodes';
/// `startupTaints` are removed once the node is up, so pods need not
/// tolerate them.
#[test]
fn template_taints_count_and_startup_taints_do_not() {
    let mut pool = nodepool("w", "win", json!([]));
    pool["spec"]["template"]["spec"]["taints"] =
        json!([{"key": "os", "value": "windows", "effect": "NoSchedule"}]);
    pool["spec"]["template"]["spec"]["startupTaints"] =
        json!([{"key": "agent", "effect": "NoSchedule"}]);
    let nodes = from_objects(&[pool, ec2nodeclass("win", "windows2022@latest")]);
    let taints: Vec<String> = nodes[0].taints.iter().map(ToString::to_string).collect();
    assert_eq!(taints, ["os=windows:NoSchedule"]);
}

/// core `pkg/apis/v1/labels.go` (`WellKnownLabels`, which a pod may require
/// though the pool leaves them open) and `pkg/scheduling/requirements.go`,
/// `Compatible` (any other label the pool does not define is one its
/// nodes do not carry: Karpenter does not launch for a pod requiring it).
#[test]
fn labels_decided_at_launch_are_open_and_undefined_ones_absent() {
    let pool = nodepool(
        "p",
        "default",
        json!([{"key": "team", "operator": "In", "values": ["shop"]},
               {"key": "tier", "operator": "In", "values": ["a", "b"]},
               {"key": "gpu", "operator": "DoesNotExist"}]),
    );
    let node = from_objects(&[pool, ec2nodeclass("default", "al2023@latest")]).remove(0);
    assert_eq!(
        node.label_value("team"),
        LabelValue::Known(Some("shop".into()))
    );
    assert_eq!(node.label_value("tier"), LabelValue::Unknown);
    assert_eq!(
        node.label_value("topology.kubernetes.io/zone"),
        LabelValue::Unknown
    );
    assert_eq!(
        node.label_value("karpenter.k8s.aws/instance-family"),
        LabelValue::Unknown
    );
    // Negative: a label nothing defines, and one the pool rules out, are absent.
    assert_eq!(node.label_value("gpu"), LabelValue::Known(None));
    assert_eq!(
        node.label_value("example.com/rack"),
        LabelValue::Known(None)
    );
    assert_eq!(
        node.label_value("kubernetes.io/os"),
        LabelValue::Known(Some("linux".into()))
    );
}

#[test]
fn node_templates_are_launchable_nodes_of_their_declared_platform() {
    let settings = Settings::from_value(&json!({"nodeTemplates": [
        {"name": "win-ng", "os": "windows", "windowsBuild": "10.0.17763",
         "labels": {"eks.amazonaws.com/nodegroup": "win-ng"},
         "taints": [{"key": "os", "value": "windows", "effect": "NoSchedule"}]},
        {"name": "any-arch", "os": "linux"}]}))
    .unwrap();
    let nodes = from_templates(&settings.node_templates);
    assert_eq!(
        summary(&nodes),
        [
            "node template win-ng: windows 10.0.17763 -",
            "node template any-arch: linux - -",
        ]
    );
    assert_eq!(nodes[0].taints.len(), 1);
    assert_eq!(
        nodes[0].label_value("kubernetes.io/arch"),
        LabelValue::Unknown
    );
    assert_eq!(
        nodes[1].label_value("kubernetes.io/os"),
        LabelValue::Known(Some("linux".into()))
    );
}
