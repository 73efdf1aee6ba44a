//! The Thread compatibility fingerprint and the profile payload fingerprints.
//!
//! A Thread's fingerprint is a [`Breakdown`] of named components, hashed under one versioned
//! scheme. Static components come from the agent's configuration; run-service components come
//! from the run's **session view** (semantic tuples for opted-in attachments, exact data for
//! everything else). The profile payload handed to the driver gets two fingerprints: `exact`
//! (concrete MCP materialization) and `session_compatibility` (the session MCP projection),
//! and a driver's session guard is built from the latter.

use std::collections::BTreeMap;

use compat_fingerprint::{Breakdown, ComponentName, Encoder, Fingerprint, Kind};
use driver_spi::{Driver, PermissionPolicy, ProfilePayload};
use run_service::RunViews;

/// The version of the Thread fingerprint scheme. A stored record with another version fails
/// closed ("fingerprint scheme changed") unless a [`SchemeMigration`] covers it.
pub const SCHEME_VERSION: u32 = 1;

const THREAD: Kind = Kind::new("agent-sdk 2026-11-30 agent thread-invocation v1");
const COMPONENT: Kind = Kind::new("agent-sdk 2026-11-30 agent thread-component v1");
const PROFILE_EXACT: Kind = Kind::new("agent-sdk 2026-11-30 agent profile-exact v1");
const PROFILE_SESSION: Kind = Kind::new("agent-sdk 2026-11-30 agent profile-session v1");

/// An explicit, tested statement that a Thread stored under an older scheme with fingerprint
/// `from` is the same configuration as `to` under the current scheme. Without one, an older
/// record never resumes: the SDK does not guess an upgrade.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchemeMigration {
    /// The scheme the record was written under.
    pub from_scheme: u32,
    /// The fingerprint stored in the record.
    pub from: Fingerprint,
    /// The fingerprint the current configuration has under [`SCHEME_VERSION`].
    pub to: Fingerprint,
}

/// The agent-level inputs of the fingerprint, fixed at construction.
#[derive(Debug, Clone, Default)]
pub(crate) struct Profile {
    pub(crate) model: Option<String>,
    pub(crate) instructions: Option<String>,
    pub(crate) workspace: Option<String>,
    pub(crate) identity: String,
    pub(crate) skills: BTreeMap<String, String>,
    pub(crate) resources: BTreeMap<String, String>,
    /// The agent's permission policy (a Thread handle may override it).
    pub(crate) permissions: PermissionPolicy,
}

fn name(s: &'static str) -> ComponentName {
    ComponentName::new(s).expect("static component names follow the grammar")
}

fn component(label: &str, project: impl FnOnce(&mut Encoder)) -> Fingerprint {
    Fingerprint::of(COMPONENT, |e| {
        e.record(|r| {
            r.field(1, |e| e.str(label));
            r.field(2, project);
        })
    })
}

fn opt(e: &mut Encoder, value: Option<&String>) {
    e.option(value, |e, v| e.str(v));
}

fn string_map(e: &mut Encoder, map: &BTreeMap<String, String>) {
    e.map(map, |e, k| e.str(k), |e, v| e.str(v));
}

/// What the core needs to know about its driver, read once when the agent is built.
#[derive(Debug, Clone)]
pub(crate) struct DriverInfo {
    pub(crate) driver_type: String,
    /// The session codec's name; `None` when the driver has no codec.
    pub(crate) codec: Option<String>,
    pub(crate) config: Option<Fingerprint>,
    pub(crate) resume: bool,
    pub(crate) fork: bool,
    /// Whether the driver delivers approval requests.
    pub(crate) approvals: bool,
    /// Whether the driver passes an output schema to its runtime natively.
    pub(crate) structured_output: bool,
    /// Whether the driver pre-warms processes.
    pub(crate) prewarm: bool,
    /// The driver's endpoint-carrying variables, for the endpoint policy.
    pub(crate) endpoint_vars: Vec<String>,
}

impl DriverInfo {
    pub(crate) fn of(driver: &dyn Driver) -> Self {
        let descriptor = driver.descriptor();
        Self {
            driver_type: descriptor.driver_type,
            codec: driver.session_codec().map(|c| c.name().to_owned()),
            config: driver
                .config_fingerprinter()
                .map(|c| c.config_fingerprint()),
            resume: descriptor.capabilities.resume,
            fork: descriptor.capabilities.fork,
            approvals: descriptor.capabilities.approvals,
            structured_output: descriptor.capabilities.structured_output,
            prewarm: descriptor.capabilities.prewarm,
            endpoint_vars: descriptor.endpoint_vars,
        }
    }
}

/// The static components: `driver`, `codec`, `driver_config`, `identity`, `model`,
/// `workspace`, `instructions`, `skills`, `profile`.
pub(crate) fn static_components(driver: &DriverInfo, profile: &Profile) -> Breakdown {
    let codec = driver.codec.as_ref();
    let config = driver.config;
    let mut b = Breakdown::new();
    let mut put = |n: &'static str, fp: Fingerprint| b.insert_or_replace(name(n), fp);
    put(
        "driver",
        component("driver", |e| e.str(&driver.driver_type)),
    );
    put("codec", component("codec", |e| opt(e, codec)));
    put(
        "driver_config",
        component("driver_config", |e| {
            e.option(config, |e, fp| e.bytes(fp.as_bytes()))
        }),
    );
    put(
        "identity",
        component("identity", |e| e.str(&profile.identity)),
    );
    put(
        "model",
        component("model", |e| opt(e, profile.model.as_ref())),
    );
    put(
        "workspace",
        component("workspace", |e| opt(e, profile.workspace.as_ref())),
    );
    put(
        "instructions",
        component("instructions", |e| opt(e, profile.instructions.as_ref())),
    );
    put(
        "skills",
        component("skills", |e| string_map(e, &profile.skills)),
    );
    put(
        "profile",
        component("profile", |e| string_map(e, &profile.resources)),
    );
    b
}

/// The Thread breakdown of one run: static components plus the session view's attachment and
/// MCP components.
/// The Thread's components: the statics, the run-service components of the session view,
/// and `permissions` when the policy is not the default (so Threads stored before policies
/// existed keep their fingerprint; a policy change is a semantic change).
pub(crate) fn thread_breakdown(
    statics: &Breakdown,
    views: &RunViews,
    permissions: &PermissionPolicy,
) -> Breakdown {
    let mut b = statics.clone();
    if !permissions.is_default() {
        b.insert_or_replace(
            name("permissions"),
            component("permissions", |e| e.str(&permissions.to_string())),
        );
    }
    for (n, fp) in views.session.components().iter() {
        b.insert_or_replace(n.clone(), *fp);
    }
    b
}

/// The Thread fingerprint of a breakdown under the current scheme.
pub(crate) fn thread_fingerprint(breakdown: &Breakdown) -> Fingerprint {
    breakdown.root(THREAD)
}

/// The profile payload: `exact` over the concrete MCP view, `session_compatibility` over the
/// session MCP view; both also cover model, instructions, skills and profile resources.
pub(crate) fn profile_payload(
    profile: &Profile,
    views: &RunViews,
    permissions: &PermissionPolicy,
) -> ProfilePayload {
    let project = |kind: Kind, mcp: Fingerprint| {
        Fingerprint::of(kind, |e| {
            e.record(|r| {
                r.field(1, |e| opt(e, profile.model.as_ref()));
                r.field(2, |e| opt(e, profile.instructions.as_ref()));
                r.field(3, |e| string_map(e, &profile.skills));
                r.field(4, |e| string_map(e, &profile.resources));
                r.field(5, |e| e.bytes(mcp.as_bytes()));
                // Absent for the default policy: earlier fingerprints stay the same.
                if !permissions.is_default() {
                    r.field(6, |e| e.str(&permissions.to_string()));
                }
            })
        })
    };
    ProfilePayload::new(
        project(PROFILE_EXACT, views.concrete.mcp()),
        project(PROFILE_SESSION, views.session.mcp()),
    )
}
