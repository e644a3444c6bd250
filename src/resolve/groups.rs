//! How a resolve's representatives become programs: grouped by option list,
//! and, for a backend that compiles a group as one translation unit, only
//! with kernels [`crate::canon::isolation`] proves isolated.

use super::{Answer, Entry, Kernel, Keyed, Outcome};
use crate::backend::Compiled;
use crate::canon::isolation::{option_names, Isolation};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

/// Groups for a backend that compiles a group as one unit: a kernel
/// joins a group only when proved isolated from every member.
pub(super) fn isolated_groups(
    batch: &[Kernel],
    keyed: &[Keyed],
    reps: &[usize],
) -> Vec<Vec<usize>> {
    let checks: HashMap<usize, Isolation> = reps
        .iter()
        .map(|&i| {
            let macros = Some(&*keyed[i].position_macros).filter(|m| !m.is_empty());
            let mut iso = Isolation::of(batch[i].text.as_bytes(), macros)
                .with_symbol(batch[i].symbol.as_bytes())
                .with_pasting(&keyed[i].pasting, &keyed[i].reached);
            if keyed[i].uncacheable.is_some() {
                iso.alone.get_or_insert_with(|| "uncacheable".into());
            }
            if let Some(why) = &keyed[i].records_names {
                // Its lines would be the group's, not its own.
                iso.alone.get_or_insert_with(|| why.clone());
            }
            let options_ok =
                option_names(&batch[i].options).is_some_and(|names| iso.declares_none_of(&names));
            if !options_ok {
                iso.alone
                    .get_or_insert_with(|| "its options name what it declares".into());
            }
            (i, iso)
        })
        .collect();
    group_by_options(batch, reps, |i, j| checks[&i].isolated_from(&checks[&j]))
}

/// A kernel's text as a unit hands it to the backend: a kernel after a
/// unit's first (`later`) without the directive prefix it shares with the
/// first, which the unit already holds. The prefix's line ends stay, so
/// diagnostics name the lines the kernel alone would.
pub(super) fn unit_text(text: &str, later: bool) -> Cow<'_, str> {
    let skip = if later {
        Isolation::of(text.as_bytes(), None).prefix_len
    } else {
        0
    };
    let (Some(prefix), Some(rest)) = (text.get(..skip), text.get(skip..)) else {
        return Cow::Borrowed(text);
    };
    if skip == 0 {
        return Cow::Borrowed(text);
    }
    let lines = prefix.matches('\n').count() + prefix.matches('\r').count()
        - prefix.matches("\r\n").count();
    Cow::Owned("\n".repeat(lines) + rest)
}

/// Answers a program's kernels without publishing or storing it.
pub(super) fn answer_uncacheable<P>(
    batch: &[Kernel],
    kernels: &[usize],
    compiled: &Compiled<P>,
    answers: &mut [Answer<P>],
) {
    for &i in kernels {
        let entry = Entry {
            program: Arc::clone(&compiled.program),
            symbol: Arc::from(batch[i].symbol.as_str()),
        };
        answers[i] = Some((entry, Outcome::Uncacheable));
    }
}

/// Representatives grouped by option list in batch order, no group holding
/// two kernels under one symbol, and a kernel joining a group only when
/// `isolated` holds between it and every member.
pub(super) fn group_by_options(
    batch: &[Kernel],
    reps: &[usize],
    isolated: impl Fn(usize, usize) -> bool,
) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for &i in reps {
        let home = groups.iter_mut().find(|g| {
            batch[g[0]].options == batch[i].options
                && g.iter().all(|&j| batch[j].symbol != batch[i].symbol)
                && g.iter().all(|&j| isolated(i, j))
        });
        match home {
            Some(g) => g.push(i),
            None => groups.push(vec![i]),
        }
    }
    groups
}
