//! Quickstart: a provider that allocates a fresh loopback port and token for every run, and
//! what its two views do across a simulated host restart.
//!
//! Run with `cargo run -p run-service --example provider_quickstart`.

mod support {
    pub(crate) mod loopback_provider;
}

use run_service::{RunAttachment, RunId, RunServiceProvider, build_views};
use support::loopback_provider::LoopbackProvider;

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime builds")
        .block_on(f)
}

fn describe(step: &str, attachment: &RunAttachment) -> run_service::RunViews {
    let service = &attachment.services[0];
    let views = build_views(std::slice::from_ref(attachment), &[])
        .expect("the example provider's attachment is valid");
    println!("{step}");
    println!(
        "  endpoint        {}",
        service.url.as_deref().unwrap_or("-")
    );
    println!("  bearer env var  {}", service.secret_env[0].name());
    println!("  concrete view   {}", views.concrete.digest());
    println!("  session view    {}", views.session.digest());
    views
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    block_on(async {
        let first_host = LoopbackProvider::new("1");
        let run_a = RunId::new("run-a");
        let a = first_host.attach_run(&run_a).await?;
        let before = describe(
            "1. First host: the provider allocates port A and token A.",
            &a,
        );
        first_host.detach_run(&run_a).await?;
        drop(first_host);

        let second_host = LoopbackProvider::new("1");
        let run_b = RunId::new("run-b");
        let b = second_host.attach_run(&run_b).await?;
        let after = describe(
            "2. After a restart: the provider allocates port B and token B.",
            &b,
        );
        second_host.detach_run(&run_b).await?;
        println!(
            "   -> session view unchanged: {}; concrete view changed: {}",
            before.session == after.session,
            before.concrete != after.concrete
        );
        assert_eq!(before.session.digest(), after.session.digest());

        let upgraded = LoopbackProvider::new("2");
        let run_c = RunId::new("run-c");
        let c = upgraded.attach_run(&run_c).await?;
        let changed = describe(
            "3. The provider ships a new tool revision (a semantic change).",
            &c,
        );
        upgraded.detach_run(&run_c).await?;
        for change in before
            .session
            .components()
            .diff(changed.session.components())
        {
            println!("   -> {change}");
        }
        assert_ne!(before.session.digest(), changed.session.digest());
        Ok(())
    })
}
