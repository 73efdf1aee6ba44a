//! The docs name what the code offers: every runtime `agentctl run --runtime` accepts (read
//! from the binary's own `--help`), every state variable and binary variable of the registry
//! and of the reference runtime are in `docs/agentctl.md`; every driver crate of the workspace
//! is in the README's crate table, in `docs/drivers.md` and in `driver-spi`'s crate docs. The
//! lists come from the code, so a runtime added without its docs fails here.

use std::path::{Path, PathBuf};

use crate::support;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap()
        .to_path_buf()
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(workspace().join(relative)).unwrap()
}

/// The values clap lists for `--runtime` in `agentctl run --help`.
fn runtimes_run_accepts() -> Vec<String> {
    let help = support::command().args(["run", "--help"]).output().unwrap();
    assert!(help.status.success(), "{help:?}");
    let help = String::from_utf8(help.stdout).unwrap();
    let at = help.find("--runtime <").expect("a --runtime option");
    let values = help[at..]
        .split_once("[possible values: ")
        .expect("its possible values")
        .1;
    let values = &values[..values.find(']').unwrap()];
    values.split(", ").map(str::to_owned).collect()
}

#[test]
fn every_runtime_and_its_variables_are_in_the_agentctl_docs() {
    let docs = read("docs/agentctl.md");
    let accepted = runtimes_run_accepts();
    assert!(accepted.len() > runtimes::all().len(), "{accepted:?}");
    let mut missing: Vec<String> = accepted
        .iter()
        .filter(|runtime| !docs.contains(&format!("`{runtime}`")))
        .map(|runtime| format!("runtime {runtime}"))
        .collect();
    let variables = runtimes::all()
        .iter()
        .flat_map(|r| [r.descriptor.state_var, r.bin_var])
        .chain([reference_runtime::DESCRIPTOR.state_var]);
    missing.extend(
        variables
            .filter(|var| !docs.contains(&format!("`{var}`")))
            .map(|var| format!("variable {var}")),
    );
    assert!(
        missing.is_empty(),
        "docs/agentctl.md does not name: {missing:?}"
    );
}

#[test]
fn every_driver_crate_is_in_the_readme_the_drivers_page_and_the_spi_docs() {
    let crates = std::fs::read_dir(workspace().join("crates")).unwrap();
    let mut drivers: Vec<String> = crates
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("driver-") && name != "driver-spi")
        .collect();
    drivers.push("reference-runtime".to_owned());
    assert!(drivers.len() >= 6, "{drivers:?}");
    let readme = read("README.md");
    let drivers_page = read("docs/drivers.md");
    let spi = read("crates/driver-spi/src/lib.rs");
    let mut missing = Vec::new();
    for name in &drivers {
        if !readme.contains(&format!("[`{name}`](crates/{name})")) {
            missing.push(format!("README.md: {name}"));
        }
        if !drivers_page.contains(&format!("`{name}`")) {
            missing.push(format!("docs/drivers.md: {name}"));
        }
        if !spi.contains(&format!("`{name}`")) {
            missing.push(format!("driver-spi docs: {name}"));
        }
    }
    assert!(missing.is_empty(), "not named: {missing:?}");
}
