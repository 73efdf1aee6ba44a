//! The provider passes the run-service conformance kit, Thread runs (`RS-06`) included.

use std::sync::Arc;

use run_service::RunServiceProvider;
use run_service::conformance::{KitOptions, check_provider};

use crate::support::{Calls, provider};

#[tokio::test]
async fn the_provider_passes_the_run_service_kit() {
    let provider = provider(&Arc::new(Calls::default()));
    let report = check_provider(&provider, &KitOptions::default())
        .await
        .unwrap();
    assert_eq!(report.clauses_passed, 6);
    assert!(report.opted_in);
    provider.close().await.unwrap();
}
