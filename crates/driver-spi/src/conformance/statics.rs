//! The checks that need no turn: capabilities (CAP) and the session codec's laws
//! (SES-01 … SES-05).

use super::*;

pub(super) fn check_capabilities(
    r: &mut Recorder,
    d1: &dyn Driver,
    d2: &dyn Driver,
    caps: &crate::Capabilities,
) {
    let codec_names = catch(|| {
        (
            d1.session_codec().map(|c| c.name().to_owned()),
            d1.session_codec().map(|c| c.name().to_owned()),
            d2.session_codec().map(|c| c.name().to_owned()),
        )
    });
    let stable_codec = match &codec_names {
        Ok((Some(x), Some(y), Some(z))) => !x.is_empty() && x == y && y == z,
        _ => false,
    };
    let fingerprints = catch(|| {
        (
            d1.config_fingerprinter().map(|f| f.config_fingerprint()),
            d1.config_fingerprinter().map(|f| f.config_fingerprint()),
            d2.config_fingerprinter().map(|f| f.config_fingerprint()),
        )
    });
    let has_fingerprinter = matches!(&fingerprints, Ok((Some(_), Some(_), Some(_))));

    r.check(
        Clause::Cap01,
        match (caps.resume, stable_codec, has_fingerprinter) {
            (true, true, true) | (false, false, _) => Ok(()),
            (true, false, _) => Err("resume is declared without a stable session codec".into()),
            (true, true, false) => Err("resume is declared without a config fingerprinter".into()),
            (false, true, _) => {
                Err("a stable session codec exists but resume is not declared".into())
            }
        },
    );

    match fingerprints {
        Ok((Some(x), Some(y), Some(z))) => r.check(
            Clause::Cap02,
            if x != y || y != z {
                Err("the config fingerprint differs between calls or instances".into())
            } else if x == Fingerprint::from_bytes([0; 32]) {
                Err("the config fingerprint is empty (all zero)".into())
            } else {
                Ok(())
            },
        ),
        Ok((None, None, None)) => r.skip(Clause::Cap02, "the driver has no config fingerprinter"),
        Ok(_) => r.fail(
            Clause::Cap02,
            "the config fingerprinter is present on some calls or instances only",
        ),
        Err(p) => r.fail(Clause::Cap02, format!("config_fingerprint {p}")),
    }

    let lifecycles = catch(|| {
        (
            d1.process_lifecycle().is_some(),
            d2.process_lifecycle().is_some(),
        )
    });
    r.check(
        Clause::Cap03,
        match lifecycles {
            Ok((x, y)) if x != y => Err("the process lifecycle differs between instances".into()),
            Ok((x, _)) if x == caps.persistent_processes => Ok(()),
            Ok((true, _)) => {
                Err("a process lifecycle exists but persistent processes are not declared".into())
            }
            Ok(_) => Err("persistent processes are declared without a process lifecycle".into()),
            Err(p) => Err(format!("process_lifecycle {p}")),
        },
    );

    r.check(
        Clause::Cap04,
        if caps.fork && !caps.resume {
            Err("fork is declared without resume".into())
        } else {
            Ok(())
        },
    );
}

/// A state for the codec laws, with every guard key and an extra data entry.
pub(super) fn synthetic_state(codec: &dyn SessionCodec) -> SessionState {
    let mut state = SessionState::new("kit-session-0001")
        .with_display_id("Kit session")
        .with_data("kit.extra", "kit value");
    if let Ok(keys) = catch(|| codec.guard_keys().to_vec()) {
        for key in keys {
            state
                .data
                .insert(key.to_owned(), format!("kit-guard-{key}"));
        }
    }
    state
}

pub(super) fn check_codec_static(
    r: &mut Recorder,
    codec: &dyn SessionCodec,
    codec2: &dyn SessionCodec,
    state: &SessionState,
) {
    // SES-01: name.
    r.check(
        Clause::Ses01,
        match catch(|| {
            (
                codec.name().to_owned(),
                codec.name().to_owned(),
                codec2.name().to_owned(),
            )
        }) {
            Ok((x, _, _)) if x.is_empty() || x.trim() != x => {
                Err("the codec name is empty or has surrounding whitespace".into())
            }
            Ok((x, y, z)) if x != y || y != z => {
                Err("the codec name differs between calls or instances".into())
            }
            Ok(_) => Ok(()),
            Err(p) => Err(format!("name() {p}")),
        },
    );

    // SES-02: nil and empty input.
    r.check(Clause::Ses02, codec_nil_inputs(codec));

    // SES-03: lossless round trip.
    let params = match catch(|| codec.to_params(Some(state))) {
        Ok(Ok(Some(p))) => Some(p),
        Ok(Ok(None)) => {
            r.fail(Clause::Ses03, "to_params(Some(state)) returned None");
            None
        }
        Ok(Err(e)) => {
            r.fail(
                Clause::Ses03,
                format!("to_params rejected a valid state: {e}"),
            );
            None
        }
        Err(p) => {
            r.fail(Clause::Ses03, format!("to_params {p}"));
            None
        }
    };
    let Some(p1) = params else {
        r.fail(Clause::Ses04, "not checked: to_params failed");
        r.fail(Clause::Ses05, "not checked: to_params failed");
        return;
    };
    r.check(Clause::Ses03, round_trip(codec, state, &p1));

    // SES-04: deterministic guard.
    r.check(
        Clause::Ses04,
        match catch(|| {
            (
                codec.guard_fingerprint(&p1),
                codec.guard_fingerprint(&p1.clone()),
                codec2.guard_fingerprint(&p1),
            )
        }) {
            Ok((x, y, z)) if x == y && y == z => Ok(()),
            Ok(_) => Err("the guard fingerprint differs between calls or instances".into()),
            Err(p) => Err(format!("guard_fingerprint {p}")),
        },
    );

    // SES-05: every guard value counts.
    r.check(Clause::Ses05, guard_sensitivity(codec, &p1));
}

pub(super) fn codec_nil_inputs(codec: &dyn SessionCodec) -> Result<(), String> {
    match catch(|| codec.to_params(None)) {
        Ok(Ok(None)) => {}
        Ok(_) => return Err("to_params(None) is not Ok(None)".into()),
        Err(p) => return Err(format!("to_params(None) {p}")),
    }
    match catch(|| codec.from_params(None)) {
        Ok(Ok(None)) => {}
        Ok(_) => return Err("from_params(None) is not Ok(None)".into()),
        Err(p) => return Err(format!("from_params(None) {p}")),
    }
    match catch(|| codec.to_params(Some(&SessionState::new("")))) {
        Ok(Ok(Some(p))) if p.resume_id.trim().is_empty() => {
            return Err("to_params accepted a state without a resume id".into());
        }
        Ok(_) => {}
        Err(p) => return Err(format!("to_params(empty state) {p}")),
    }
    match catch(|| codec.from_params(Some(&SessionParams::default()))) {
        Ok(Ok(Some(s))) if s.resume_id.trim().is_empty() => {
            return Err("from_params accepted params without a resume id".into());
        }
        Ok(_) => {}
        Err(p) => return Err(format!("from_params(empty params) {p}")),
    }
    catch(|| codec.guard_fingerprint(&SessionParams::default()))
        .map(|_| ())
        .map_err(|p| format!("guard_fingerprint(empty params) {p}"))
}

pub(super) fn round_trip(
    codec: &dyn SessionCodec,
    state: &SessionState,
    p1: &SessionParams,
) -> Result<(), String> {
    if p1.resume_id != state.resume_id {
        return Err("to_params changed the resume id".into());
    }
    if p1.display_id.trim().is_empty() {
        return Err("to_params left the display id empty for a resumable state".into());
    }
    if state.data.iter().any(|(k, v)| p1.data.get(k) != Some(v)) {
        return Err("to_params dropped or changed a data entry".into());
    }
    let s2 = match catch(|| codec.from_params(Some(p1))) {
        Ok(Ok(Some(s))) => s,
        Ok(Ok(None)) => return Err("from_params(params) returned None".into()),
        Ok(Err(e)) => return Err(format!("from_params rejected its own params: {e}")),
        Err(p) => return Err(format!("from_params {p}")),
    };
    if s2.resume_id != state.resume_id {
        return Err("from_params changed the resume id".into());
    }
    if state.data.iter().any(|(k, v)| s2.data.get(k) != Some(v)) {
        return Err("from_params dropped or changed a data entry".into());
    }
    match catch(|| codec.to_params(Some(&s2))) {
        Ok(Ok(Some(p2))) if &p2 == p1 => Ok(()),
        Ok(Ok(_)) => Err("to_params(from_params(p)) differs from p".into()),
        Ok(Err(e)) => Err(format!("to_params rejected a state from from_params: {e}")),
        Err(p) => Err(format!("to_params {p}")),
    }
}

pub(super) fn guard_sensitivity(
    codec: &dyn SessionCodec,
    p1: &SessionParams,
) -> Result<(), String> {
    let keys = catch(|| codec.guard_keys().to_vec()).map_err(|p| format!("guard_keys {p}"))?;
    if keys.is_empty() {
        return Err(
            "the codec declares no guard keys; the guard must cover at least the profile's \
             session-compatibility fingerprint"
                .into(),
        );
    }
    let base =
        catch(|| codec.guard_fingerprint(p1)).map_err(|p| format!("guard_fingerprint {p}"))?;
    for key in keys {
        let mut changed = p1.clone();
        let value = changed.data.get(key).cloned().unwrap_or_default();
        changed
            .data
            .insert(key.to_owned(), format!("{value}-kit-changed"));
        let fp = catch(|| codec.guard_fingerprint(&changed))
            .map_err(|p| format!("guard_fingerprint {p}"))?;
        if fp == base {
            return Err(format!(
                "changing guard value `{key}` does not change the guard fingerprint"
            ));
        }
        let mut removed = p1.clone();
        if removed.data.remove(key).is_some() {
            let fp = catch(|| codec.guard_fingerprint(&removed))
                .map_err(|p| format!("guard_fingerprint {p}"))?;
            if fp == base {
                return Err(format!(
                    "removing guard value `{key}` does not change the guard fingerprint"
                ));
            }
        }
    }
    Ok(())
}
