//! Per-turn usage from Codex's cumulative totals.
//!
//! `turn.completed.usage` is the running total of the whole thread, earlier processes and (for
//! a fork) the source thread included. The driver stores the totals in the checkpoint's data
//! under [`TOTAL_KEY`] and reports each turn's usage as the difference.

use driver_spi::{SessionState, Usage};

/// The session data key of the thread's usage totals: `input,cached_input,output`.
pub(crate) const TOTAL_KEY: &str = "codex.usage_total";

pub(crate) fn encode(total: Usage) -> String {
    format!(
        "{},{},{}",
        total.input_tokens, total.cached_input_tokens, total.output_tokens
    )
}

pub(crate) fn decode(text: &str) -> Option<Usage> {
    let mut parts = text.split(',').map(|p| p.parse::<u64>().ok());
    let (Some(Some(input)), Some(Some(cached)), Some(Some(output)), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    Some(Usage::new(input, output).with_cached_input_tokens(cached))
}

/// The usage of this turn: `total` minus the totals stored in `previous` (the state the turn
/// resumed or forked). When there are none, or the totals went down (Codex compacted or
/// rewrote the thread), the total is the best figure there is.
pub(crate) fn this_turn(total: Usage, previous: Option<&SessionState>) -> Usage {
    let Some(before) = previous
        .and_then(|s| s.data.get(TOTAL_KEY))
        .and_then(|t| decode(t))
    else {
        return total;
    };
    if total.input_tokens < before.input_tokens
        || total.cached_input_tokens < before.cached_input_tokens
        || total.output_tokens < before.output_tokens
    {
        return total;
    }
    Usage::new(
        total.input_tokens - before.input_tokens,
        total.output_tokens - before.output_tokens,
    )
    .with_cached_input_tokens(total.cached_input_tokens - before.cached_input_tokens)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn turns_are_differences_of_totals() {
        let first = Usage::new(11, 7).with_cached_input_tokens(3);
        assert_eq!(this_turn(first, None), first);
        let state = SessionState::new("t").with_data(TOTAL_KEY, encode(first));
        let second = Usage::new(27, 16).with_cached_input_tokens(6);
        assert_eq!(
            this_turn(second, Some(&state)),
            Usage::new(16, 9).with_cached_input_tokens(3)
        );
        // Totals that went down, or garbage, fall back to the total.
        let smaller = Usage::new(5, 1);
        assert_eq!(this_turn(smaller, Some(&state)), smaller);
        for bad in ["", "1,2", "1,2,3,4", "a,b,c", "-1,2,3"] {
            let state = SessionState::new("t").with_data(TOTAL_KEY, bad);
            assert_eq!(this_turn(second, Some(&state)), second, "{bad}");
        }
        assert_eq!(decode(&encode(second)), Some(second));
    }
}
