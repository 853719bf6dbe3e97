//! The Chrome trace format, shared by every reader of a JSON trace: the document's structure
//! (`document.rs`: a `traceEvents` object or a bare array, an array left open at the end of
//! the file), a window over the input so a gigabyte file is read in a few megabytes
//! (`stream.rs`), and the tokenizer that reads one event's members in one pass
//! (`cursor.rs`), with the separators between members predicted from the objects before
//! (`layout.rs`), and every event of a document in memory read by a format's own record parser
//! (`records.rs`). A format's reader (Kineto's `kineto/fast.rs`, `horovod/`, `tf_timeline/`)
//! picks out its own members with the cursor and keeps what it needs.

pub(crate) mod cursor;
pub(crate) mod document;
pub(crate) mod layout;
pub(crate) mod records;
pub(crate) mod stream;
