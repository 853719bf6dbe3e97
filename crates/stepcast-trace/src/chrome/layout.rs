//! Learned member layouts: the bytes from the end of one member's value to the start of the
//! next member's value (or to the object's `}`), as the last object that had them wrote them.
//!
//! Why: a profiler writes millions of objects with the same members in the same order and the
//! same spacing (`, "name": `, `,\n    "args": {`), and tokenizing those bytes (whitespace, the
//! comma, the quoted name, the colon) was most of a reader's work per member. Bytes equal to
//! bytes already read as "separator, name, colon, whitespace" read the same way again: one
//! comparison replaces the tokenizing, and the value is read as before. Whatever differs (another
//! member, other spacing, the end of the window) is read the general way and learned.
//!
//! Strictness is [`Cursor::members`]'s: a prediction only ever matches bytes that were checked
//! when they were learned.

use super::cursor::{Cursor, Parse};

/// The member names a reader tells apart, as rows of its [`Layout`].
pub(crate) trait MemberKey: Copy {
    /// How many keys there are (`index` is below it).
    const COUNT: usize;
    fn index(self) -> usize;
}

/// The longest separator kept, in words: `, "est. achieved occupancy %": ` is 31 bytes.
const WORDS: usize = 5;

/// Separators remembered after each member: an event's phase changes what follows its first
/// members (`"ph": "X", "cat"` but `"ph": "s", "id"`), and Kineto interleaves four phases.
const WAYS: usize = 4;

/// What followed a member (or an object's `{`) once.
#[derive(Clone, Copy)]
struct Next<K> {
    /// The separator's bytes, eight to a word (first byte lowest), zero after `len`.
    words: [u64; WORDS],
    /// Per word, the bits that are the separator's. Kept, though `len` gives them: derived per
    /// word on every comparison they were 5 % of a read's instructions.
    masks: [u64; WORDS],
    len: u8,
    /// The member those bytes name, or `None` when they end the object.
    member: Option<K>,
}

/// Word `k` of `bytes`, first byte lowest.
#[inline(always)]
fn word(bytes: &[u8; 8 * WORDS], k: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[8 * k..8 * k + 8]);
    u64::from_le_bytes(word)
}

impl<K> Next<K> {
    /// Whether `b` holds this separator at `at`, a word at a time: the first word tells most
    /// separators apart. (Every word at once, without a branch per word, took fewer
    /// instructions and more time.)
    #[inline(always)]
    fn is_at(&self, b: &[u8], at: usize) -> bool {
        let Some(bytes) = b
            .get(at..)
            .and_then(|rest| rest.first_chunk::<{ 8 * WORDS }>())
        else {
            // Near the end of the window: byte by byte.
            let len = self.len as usize;
            return b.get(at..at + len).is_some_and(|window| {
                window
                    .iter()
                    .enumerate()
                    .all(|(k, &byte)| (self.words[k / 8] >> (8 * (k % 8))) as u8 == byte)
            });
        };
        let used = (self.len as usize).div_ceil(8);
        (0..used).all(|k| (word(bytes, k) ^ self.words[k]) & self.masks[k] == 0)
    }
}

/// One reader's learned layouts: row 0 after an object's `{`, row `1 + k` after the value of
/// member `k`, each with up to [`WAYS`] separators. Kept across objects (and across windows of
/// the input).
pub(crate) struct Layout<K> {
    after: Vec<[Option<Next<K>>; WAYS]>,
    /// Per row, the way the next separator learned replaces (round robin).
    replace: Vec<u8>,
    #[cfg(test)]
    learned: u64,
}

impl<K: MemberKey> Default for Layout<K> {
    fn default() -> Self {
        Layout {
            after: vec![[None; WAYS]; K::COUNT + 1],
            replace: vec![0; K::COUNT + 1],
            #[cfg(test)]
            learned: 0,
        }
    }
}

impl<K: MemberKey> Layout<K> {
    /// The member named by the separator at `at` in `b`, if it is one learned in `row`, and
    /// the separator's length.
    #[inline(always)]
    fn predict(&self, row: usize, b: &[u8], at: usize) -> Option<(Option<K>, usize)> {
        self.after[row]
            .iter()
            .flatten()
            .find(|next| next.is_at(b, at))
            .map(|next| (next.member, next.len as usize))
    }

    /// How many separators this layout has learned (replaced ones included).
    #[cfg(test)]
    pub(crate) fn learned(&self) -> u64 {
        self.learned
    }

    fn learn(&mut self, row: usize, bytes: &[u8], member: Option<K>) {
        if bytes.len() > 8 * WORDS {
            return;
        }
        let (mut words, mut masks) = ([0u64; WORDS], [0u64; WORDS]);
        for (k, &byte) in bytes.iter().enumerate() {
            words[k / 8] |= u64::from(byte) << (8 * (k % 8));
            masks[k / 8] |= 0xff << (8 * (k % 8));
        }
        let way = self.replace[row] as usize;
        self.after[row][way] = Some(Next {
            words,
            masks,
            len: bytes.len() as u8,
            member,
        });
        self.replace[row] = ((way + 1) % WAYS) as u8;
        #[cfg(test)]
        {
            self.learned += 1;
        }
    }
}

impl<'a> Cursor<'a> {
    /// The members of an object whose `{` is consumed, up to and including its `}`, as
    /// [`Cursor::members`] reads them: each name classified by `key` (an escaped name as
    /// `escaped`, a `null` value skipped), the separators predicted from `layout` and learned
    /// into it.
    pub(crate) fn members_by_layout<K: MemberKey>(
        &mut self,
        layout: &mut Layout<K>,
        key: impl Fn(&[u8]) -> K,
        escaped: K,
        mut member: impl FnMut(&mut Self, K) -> Parse<()>,
    ) -> Parse<()> {
        let mut row = 0;
        loop {
            let at = self.i;
            let next = match layout.predict(row, self.b, at) {
                Some((next, len)) => {
                    self.i = at + len;
                    next
                }
                None => {
                    let next = self.member_start(row == 0)?.map(|(name, is_escaped)| {
                        if is_escaped { escaped } else { key(name) }
                    });
                    layout.learn(row, &self.b[at..self.i], next);
                    next
                }
            };
            let Some(k) = next else {
                return Ok(());
            };
            // A learned separator may end before more whitespace than it had.
            self.ws()?;
            if self.b[self.i] == b'n' {
                // `null` is as good as absent (as serde reads an `Option`).
                self.skip_value()?;
            } else {
                member(self, k)?;
            }
            row = 1 + k.index();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chrome::cursor::Incomplete;

    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Key {
        A,
        B,
        Other,
    }

    impl MemberKey for Key {
        const COUNT: usize = 3;
        fn index(self) -> usize {
            self as usize
        }
    }

    fn key(name: &[u8]) -> Key {
        match name {
            b"a" => Key::A,
            b"b" => Key::B,
            _ => Key::Other,
        }
    }

    /// Reads one object with `layout`, as (member, value text) pairs, and the bytes taken.
    fn read(layout: &mut Layout<Key>, text: &str) -> Parse<(Vec<(Key, String)>, usize)> {
        let mut c = Cursor {
            b: text.as_bytes(),
            i: 0,
        };
        c.expect(b'{', "{")?;
        let mut seen = Vec::new();
        c.members_by_layout(layout, key, Key::Other, |c, k| {
            let from = c.i;
            c.skip_value()?;
            seen.push((k, text[from..c.i].to_string()));
            Ok(())
        })?;
        Ok((seen, c.i))
    }

    /// With a layout learned on other objects, every object reads as it reads with a fresh one
    /// (the general tokenizer), whatever its spacing, members and order, whole or cut.
    #[test]
    fn a_learned_layout_reads_what_the_tokenizer_reads() {
        let objects = [
            r#"{"a": 1, "b": "x", "c": [1, 2]} "#,
            r#"{"a": 2, "b": "y", "c": [3]} "#,
            "{\n  \"a\": 3,\n  \"b\": \"z\"\n} ",
            r#"{"a": 4,  "b": "w", "c": null} "#,
            r#"{"b": 5, "a": 6} "#,
            r#"{"a": 7, "b\u0061": 8} "#,
            r#"{"a": 9, "b": 10,} "#,
            r#"{"a": 11 "b": 12} "#,
            r#"{} "#,
            r#"{"a": 13, "b": 14, "c": 15, "d": 16} "#,
        ];
        let mut layout = Layout::default();
        let mut predicted = 0;
        for round in 0..3 {
            for text in objects {
                for cut in (0..=text.len()).rev() {
                    let part = &text[..cut];
                    let expected = read(&mut Layout::default(), part);
                    let before = layout.after.iter().flatten().flatten().count();
                    assert_eq!(read(&mut layout, part), expected, "round {round}: {part:?}");
                    predicted += usize::from(before > 0);
                }
            }
        }
        assert!(predicted > 100);
        // The malformed objects are refused, at the same place either way.
        assert!(matches!(
            read(&mut layout, objects[6]),
            Err(Incomplete::Invalid { .. })
        ));
    }

    /// A prediction is taken: after one object, the same layout is read by comparison (what
    /// the learned rows say), and a member spelled differently is learned anew.
    #[test]
    fn learns_the_bytes_between_members() {
        let mut layout = Layout::default();
        read(&mut layout, r#"{"a": 1, "b": 2}"#).expect("object");
        let row = |layout: &Layout<Key>, r: usize| {
            layout.after[r]
                .iter()
                .flatten()
                .map(|n| {
                    let bytes: Vec<u8> = (0..n.len as usize)
                        .map(|k| (n.words[k / 8] >> (8 * (k % 8))) as u8)
                        .collect();
                    (String::from_utf8_lossy(&bytes).into_owned(), n.member)
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(row(&layout, 0), [(r#""a": "#.into(), Some(Key::A))]);
        assert_eq!(row(&layout, 1), [(r#", "b": "#.into(), Some(Key::B))]);
        assert_eq!(row(&layout, 2), [("}".into(), None)]);
        // The same layout again: nothing new learned.
        read(&mut layout, r#"{"a": 3, "b": 4}"#).expect("object");
        assert_eq!(row(&layout, 1).len(), 1);
        read(&mut layout, "{\"a\": 1,\n \"b\": 2 }").expect("object");
        assert_eq!(
            row(&layout, 1),
            [
                (r#", "b": "#.into(), Some(Key::B)),
                (",\n \"b\": ".into(), Some(Key::B))
            ]
        );
        assert_eq!(row(&layout, 2), [("}".into(), None), (" }".into(), None)]);
    }
}
