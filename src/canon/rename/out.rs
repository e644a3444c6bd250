//! The canonical text as a pass writes it: kept runs of the text and the
//! names that replace renamed ones.

/// How long a run [`Out::put`] copies as a fixed-size block.
pub(super) const RUN: usize = 16;

/// How long a run of the text before a renamed name [`Out::replace`] copies
/// as a block: the kept text between two names is often longer than a name.
const GAP: usize = 2 * RUN;

/// The text written so far, `buf[..at]`, in a buffer kept longer than that
/// (zeros past `at`, or bytes a block copy left there): a short run is
/// written as the [`RUN`] bytes from its start, over the room, and only its
/// own length counted, one copy of known size and one test of the room
/// instead of a `Vec`'s reserve and a call per run.
pub(super) struct Out {
    buf: Vec<u8>,
    at: usize,
    /// How far the input text has been written out.
    pub(super) copied: usize,
}

impl Out {
    /// Room for `len` bytes (the text's length: most canonical texts are no
    /// longer than their input) before the buffer grows.
    pub(super) fn with_room(len: usize) -> Out {
        Out {
            buf: vec![0; len + GAP + RUN],
            at: 0,
            copied: 0,
        }
    }

    /// Appends `src[from..to]`.
    #[inline(always)]
    pub(super) fn put(&mut self, src: &[u8], from: usize, to: usize) {
        let len = to.wrapping_sub(from);
        let run = src.get(from..).and_then(<[u8]>::first_chunk::<RUN>);
        let room = self
            .buf
            .get_mut(self.at..)
            .and_then(<[u8]>::first_chunk_mut::<RUN>);
        match (run, room) {
            (Some(run), Some(room)) if len <= RUN => {
                *room = *run;
                self.at += len;
            }
            _ => self.put_long(src, from, to),
        }
    }

    /// Writes `text` up to `start`, then `names[from..to]` in place of the
    /// name `text[start..end]`: [`Out::skip`] and [`Out::put`], with one
    /// test of the room for both where the run before the name is short.
    #[inline(always)]
    pub(super) fn replace(
        &mut self,
        text: &[u8],
        (start, end): (usize, usize),
        names: &[u8],
        (from, to): (usize, usize),
    ) {
        let gap = start.wrapping_sub(self.copied);
        let len = to.wrapping_sub(from);
        if gap <= GAP && len <= RUN {
            let room = self
                .buf
                .get_mut(self.at..)
                .and_then(<[u8]>::first_chunk_mut::<{ GAP + RUN }>);
            if let Some(room) = room {
                let run = text.get(self.copied..).and_then(<[u8]>::first_chunk::<GAP>);
                let name = names.get(from..).and_then(<[u8]>::first_chunk::<RUN>);
                if let (Some(run), Some(name)) = (run, name) {
                    room[..GAP].copy_from_slice(run);
                    room[gap..gap + RUN].copy_from_slice(name);
                    self.at += gap + len;
                    self.copied = end;
                    return;
                }
            }
        }
        self.skip(text, start, end);
        self.put(names, from, to);
    }

    /// [`Out::put`] of a run too long for a block, near the end of `src` or
    /// of the room (which then grows).
    #[inline(never)]
    fn put_long(&mut self, src: &[u8], from: usize, to: usize) {
        let len = to - from;
        let end = self.at + len;
        if end + RUN > self.buf.len() {
            self.buf.resize((end + RUN).max(2 * self.buf.len()), 0);
        }
        self.buf[self.at..end].copy_from_slice(&src[from..to]);
        self.at = end;
    }

    /// Writes `text` up to `start`, where a name that is replaced starts,
    /// and skips it to `end`.
    #[inline(always)]
    pub(super) fn skip(&mut self, text: &[u8], start: usize, end: usize) {
        self.put(text, self.copied, start);
        self.copied = end;
    }

    /// Writes the rest of `text` and gives the canonical text.
    pub(super) fn finish(mut self, text: &[u8]) -> Vec<u8> {
        self.put_long(text, self.copied, text.len());
        self.buf.truncate(self.at);
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::{Out, RUN};

    #[test]
    fn put_writes_exactly_the_run_whatever_the_room() {
        let src: Vec<u8> = (0..80).collect();
        for room in [0, 1, RUN, 3 * RUN, 5 * RUN] {
            for from in 0..src.len() {
                for to in from..=src.len() {
                    let mut out = Out::with_room(room);
                    out.put(b"ab", 0, 2);
                    out.put(&src, from, to);
                    out.put(b"c", 0, 1);
                    let want = [&b"ab"[..], &src[from..to], b"c"].concat();
                    assert_eq!(out.finish(b""), want, "{room}: {from}..{to}");
                    let mut out = Out::with_room(room);
                    out.put(b"ab", 0, 2);
                    for (start, end) in [(from, to), (to, to)] {
                        out.replace(&src, (start, end), &src, (start / 2, end / 2 + 1));
                    }
                    out.put(b"c", 0, 1);
                    let want = [
                        &b"ab"[..],
                        &src[..from],
                        &src[from / 2..to / 2 + 1],
                        &src[to / 2..to / 2 + 1],
                        b"c",
                        &src[to..],
                    ]
                    .concat();
                    assert_eq!(out.finish(&src), want, "{room}: {from}..{to}");
                }
            }
        }
    }
}
