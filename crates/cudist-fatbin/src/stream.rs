//! Fatbin entries read out of a stream: a host ELF file read front to back without its section
//! table, as `cudist select` reads a wheel member fetched by range requests and inflated as it
//! arrives. Containers are found by their magic on 8-byte boundaries within the file's loaded
//! bytes; each entry's header is kept and its payload skipped, so memory stays at a header's
//! size (and the start of a cubin's payload) whatever the file's. A caller can stop as soon as
//! the entries seen answer its question.
//!
//! Without the section table, `.nv_fatbin` (what the runtime registers) and `__nv_relfatbin`
//! (relocatable code of an `-rdc` build, also loaded) look alike. Their cubins differ: a
//! relocatable one is an `ET_REL` ELF file, a loadable one `ET_EXEC`. So the start of each cubin's
//! payload is decoded (stored, or the first LZ4 literals, or the first zstd block) far enough to
//! read its ELF type, and a container holding an `ET_REL` cubin is reported as `__nv_relfatbin`.

use std::io::Read;

use crate::{
    entry_from_header, u16_at, u32_at, u64_at, Codec, Entry, EntryKind, SectionKind,
    CONTAINER_MAGIC,
};

/// How much of a compressed cubin's payload is kept to read its ELF type from: a zstd frame's
/// first block decodes once it is whole, and a block holds at most 128 KiB.
const PEEK_ZSTD: u64 = 160 << 10;
/// An LZ4 block's first literals.
const PEEK_LZ4: u64 = 64;
/// A stored cubin's ELF header.
const PEEK_STORED: u64 = 64;

/// The ELF type (`e_type`) of a cubin from the start of its payload, if that start tells it.
fn cubin_elf_type(codec: Codec, start: &[u8]) -> Option<u16> {
    let header: Vec<u8> = match codec {
        Codec::None => start.get(..18)?.to_vec(),
        Codec::Lz4 => {
            // The first sequence: a token whose high nibble is the literal length (15: more
            // length bytes follow, each 255 adding on), then the literals themselves.
            let (&token, mut rest) = start.split_first()?;
            let mut len = (token >> 4) as usize;
            if len == 15 {
                loop {
                    let (&b, r) = rest.split_first()?;
                    rest = r;
                    len += b as usize;
                    if b != 255 {
                        break;
                    }
                }
            }
            if len < 18 {
                return None;
            }
            rest.get(..18)?.to_vec()
        }
        Codec::Zstd => {
            let mut out = [0u8; 18];
            let mut d = zstd::stream::read::Decoder::with_buffer(start).ok()?;
            d.read_exact(&mut out).ok()?;
            out.to_vec()
        }
        Codec::Unknown => return None,
    };
    (header[..4] == *b"\x7fELF").then(|| u16::from_le_bytes([header[16], header[17]]))
}

/// The largest entry header taken for real (headers seen are 0x40 and 0x48 bytes; concatenated
/// entries carry their image table in it).
const MAX_HEADER: u64 = 1 << 20;

enum State {
    /// Looking for a container's magic.
    Seek,
    /// At an entry header of the container that ends at `end`.
    Entries,
    /// Skipping bytes up to `until` (a payload, a container's zero tail).
    Skip { until: u64 },
    /// Keeping the first `keep` bytes of the payload of the last held cubin (which ends at
    /// `until`) to read its ELF type.
    Peek { keep: u64, until: u64 },
    /// Past the bytes containers may be in.
    Done,
}

/// A scan of one file's bytes for fatbin containers ([`StreamScan::feed`] them in order).
pub struct StreamScan {
    section: SectionKind,
    /// Containers lie before this offset (the end of the file's loaded bytes).
    limit: u64,
    /// Bytes not yet consumed; `pending[0]` is at file offset `at`.
    pending: Vec<u8>,
    at: u64,
    state: State,
    /// The end of the container being read.
    end: u64,
    /// Entries of the container being read.
    in_container: usize,
    containers: usize,
    entries: Vec<Entry>,
    /// Entries of the container being read while its kind is not known: they join `entries`
    /// once its first cubin's ELF type is read (or it ends), so an entry once seen never
    /// changes its label.
    held: Vec<Entry>,
    /// Whether the kind of the container being read is known.
    decided: bool,
    problem: Option<String>,
    /// The container found to hold relocatable code.
    relocatable: Option<usize>,
}

impl StreamScan {
    /// A scan for containers before offset `limit`; entries are reported as of `section`, with
    /// `offset` their offset in the file.
    pub fn new(section: SectionKind, limit: u64) -> StreamScan {
        StreamScan {
            section,
            limit,
            pending: Vec::new(),
            at: 0,
            state: State::Seek,
            end: 0,
            in_container: 0,
            containers: 0,
            entries: Vec::new(),
            held: Vec::new(),
            decided: false,
            problem: None,
            relocatable: None,
        }
    }

    /// The entries seen so far, in file order. An entry is listed once its container's kind
    /// (plain or relocatable) is known, and is not changed after.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Ends the scan where the bytes ended: entries of a container cut short whose kind was not
    /// yet known are listed as of the scan's section.
    pub fn finish(&mut self) {
        self.release();
    }

    /// Lists the held entries: the container's kind is known.
    fn release(&mut self) {
        self.decided = true;
        self.entries.append(&mut self.held);
    }

    /// Containers read to their end.
    pub fn containers_done(&self) -> usize {
        self.containers
    }

    /// Whether the scan is inside a container.
    pub fn in_container(&self) -> bool {
        matches!(
            self.state,
            State::Entries | State::Skip { .. } | State::Peek { .. }
        )
    }

    /// Whether the scan has passed the limit: nothing more can be found.
    pub fn done(&self) -> bool {
        matches!(self.state, State::Done)
    }

    /// What was wrong with a container whose first entry read but a later one did not (the scan
    /// goes on looking for containers after it).
    pub fn problem(&self) -> Option<&str> {
        self.problem.as_deref()
    }

    /// Takes the next bytes of the file.
    pub fn feed(&mut self, mut data: &[u8]) {
        loop {
            // A payload being skipped is not copied.
            if let (State::Skip { until }, true) = (&self.state, self.pending.is_empty()) {
                let k = (until - self.at).min(data.len() as u64) as usize;
                self.at += k as u64;
                data = &data[k..];
                if self.at < *until {
                    return;
                }
                self.state = State::Entries;
            }
            if matches!(self.state, State::Done) {
                return;
            }
            self.pending.extend_from_slice(data);
            data = &[];
            while self.step() {}
            if !matches!(self.state, State::Skip { .. }) || !self.pending.is_empty() {
                return;
            }
        }
    }

    fn consume(&mut self, n: usize) {
        self.pending.drain(..n);
        self.at += n as u64;
    }

    /// One step on the pending bytes: false when it needs more.
    fn step(&mut self) -> bool {
        match self.state {
            State::Done => false,
            State::Skip { until } => {
                let k = (until - self.at).min(self.pending.len() as u64) as usize;
                self.consume(k);
                if self.at == until {
                    self.state = State::Entries;
                    true
                } else {
                    false
                }
            }
            State::Peek { keep, until } => {
                if (self.pending.len() as u64) < keep {
                    return false;
                }
                let codec = self.held.last().map_or(Codec::None, |e| e.codec);
                if cubin_elf_type(codec, &self.pending[..keep as usize]) == Some(1) {
                    // ET_REL: relocatable code, and so is the rest of its container.
                    for e in &mut self.held {
                        e.section = SectionKind::RelFatbin;
                    }
                    self.relocatable = Some(self.containers);
                }
                self.release();
                self.state = State::Skip { until };
                true
            }
            State::Seek => {
                if self.at >= self.limit {
                    self.state = State::Done;
                    self.pending = Vec::new();
                    return false;
                }
                let mut i = ((8 - self.at % 8) % 8) as usize;
                while i + 4 <= self.pending.len() && self.at + (i as u64) < self.limit {
                    if u32_at(&self.pending, i) == CONTAINER_MAGIC {
                        if i + 16 > self.pending.len() {
                            self.consume(i);
                            return false;
                        }
                        let header_size = u16_at(&self.pending, i + 6) as u64;
                        let fat_size = u64_at(&self.pending, i + 8);
                        let start = self.at + i as u64;
                        let fits = start
                            .checked_add(header_size)
                            .and_then(|s| s.checked_add(fat_size))
                            .is_some_and(|e| e <= self.limit);
                        if header_size >= 16 && fat_size >= 64 && fits {
                            self.consume(i);
                            self.end = start + header_size + fat_size;
                            self.in_container = 0;
                            self.decided = false;
                            self.state = State::Skip {
                                until: start + header_size,
                            };
                            return true;
                        }
                    }
                    i += 8;
                }
                let keep_from = i.min(self.pending.len());
                self.consume(keep_from);
                if self.at >= self.limit {
                    self.state = State::Done;
                    self.pending = Vec::new();
                }
                false
            }
            State::Entries => {
                if self.at >= self.end {
                    self.release();
                    self.containers += 1;
                    self.state = State::Seek;
                    return true;
                }
                let left = self.end - self.at;
                if left < crate::ENTRY_HEADER_MIN as u64 {
                    // Padding at the end of a container.
                    self.state = State::Skip { until: self.end };
                    return true;
                }
                if self.pending.len() < crate::ENTRY_HEADER_MIN {
                    return false;
                }
                let raw_kind = u16_at(&self.pending, 0);
                let header_size = u32_at(&self.pending, 4) as u64;
                let payload = u64_at(&self.pending, 8);
                if raw_kind == 0 && header_size == 0 && payload == 0 {
                    self.state = State::Skip { until: self.end };
                    return true;
                }
                let total = header_size.saturating_add(payload);
                if header_size < crate::ENTRY_HEADER_MIN as u64
                    || header_size > MAX_HEADER
                    || total > left
                {
                    return self.not_an_entry(format!(
                        "entry at offset {:#x}: header size {header_size:#x} and payload {payload} do not fit the container",
                        self.at
                    ));
                }
                if (self.pending.len() as u64) < header_size {
                    return false;
                }
                match entry_from_header(
                    &self.pending[..header_size as usize],
                    self.at as usize,
                    self.section,
                    self.containers,
                ) {
                    Ok(mut e) => {
                        let until = self.at + total;
                        if self.relocatable == Some(self.containers) {
                            e.section = SectionKind::RelFatbin;
                        }
                        let stored = if e.codec == Codec::None {
                            e.payload_size
                        } else {
                            e.compressed_size
                        };
                        let peek = match e.codec {
                            Codec::None => PEEK_STORED,
                            Codec::Lz4 => PEEK_LZ4,
                            _ => PEEK_ZSTD,
                        }
                        .min(stored);
                        let is_cubin = e.kind == EntryKind::Cubin;
                        if self.decided {
                            self.entries.push(e);
                        } else {
                            self.held.push(e);
                        }
                        self.in_container += 1;
                        self.consume(header_size as usize);
                        self.state = if is_cubin && !self.decided {
                            State::Peek { keep: peek, until }
                        } else {
                            State::Skip { until }
                        };
                        true
                    }
                    Err(e) => self.not_an_entry(e.to_string()),
                }
            }
        }
    }

    /// An entry that does not read: at a container's first entry the magic was a coincidence
    /// and the search goes on; later, the container is damaged, which is said.
    fn not_an_entry(&mut self, why: String) -> bool {
        if self.in_container > 0 && self.problem.is_none() {
            self.problem = Some(why);
        }
        self.release();
        self.state = State::Seek;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A container of entries (kind, sm, payload length), as nvcc lays one out: an ELF-looking
    /// cubin payload of type ET_EXEC.
    fn container(entries: &[(u16, u32, usize)]) -> Vec<u8> {
        container_of(entries, 2)
    }

    /// The same, with cubins of ELF type `elf_type` (1 for the relocatable code of `-rdc`).
    fn container_of(entries: &[(u16, u32, usize)], elf_type: u16) -> Vec<u8> {
        let built: Vec<Vec<u8>> = entries
            .iter()
            .map(|&(kind, sm, len)| {
                let mut payload = vec![0xABu8; len];
                if len >= 18 {
                    payload[..4].copy_from_slice(b"\x7fELF");
                    payload[16..18].copy_from_slice(&elf_type.to_le_bytes());
                }
                crate::tests::entry(kind, sm, 0, &payload, None)
            })
            .collect();
        crate::tests::container(&built)
    }

    #[test]
    fn finds_what_parse_section_finds_whatever_the_piece_sizes() {
        let mut file = vec![0x90u8; 1000]; // "code" before the section
        file.extend_from_slice(&CONTAINER_MAGIC.to_le_bytes()); // a magic with no header after it
        file.resize(1024, 0);
        let section_at = file.len();
        let mut section = container(&[(2, 75, 4000), (2, 90, 3000), (1, 90, 512)]);
        section.resize(section.len().next_multiple_of(8), 0);
        section.extend(container(&[(2, 80, 100)]));
        file.extend_from_slice(&section);
        let limit = file.len() as u64;
        file.extend(container(&[(2, 52, 10)])); // past the limit: not loaded
        let want: Vec<(u32, usize)> = crate::parse_section(&section, SectionKind::NvFatbin)
            .unwrap()
            .iter()
            .map(|e| (e.sm, e.offset + section_at))
            .collect();
        for piece in [1, 7, 64, 1000, file.len()] {
            let mut s = StreamScan::new(SectionKind::NvFatbin, limit);
            for chunk in file.chunks(piece) {
                s.feed(chunk);
            }
            let got: Vec<(u32, usize)> = s.entries().iter().map(|e| (e.sm, e.offset)).collect();
            assert_eq!(got, want, "piece {piece}");
            assert_eq!(s.containers_done(), 2);
            assert!(s.done() && s.problem().is_none());
        }
    }

    #[test]
    fn an_entry_once_listed_keeps_its_label_whatever_the_piece_sizes() {
        // A plain container, then a relocatable one whose PTX comes before its first cubin:
        // that PTX is relocatable too, which is known only at the cubin's ELF header.
        let mut file = container(&[(1, 90, 300), (2, 90, 200)]);
        file.resize(file.len().next_multiple_of(8), 0);
        file.extend(container_of(&[(1, 80, 300), (2, 80, 200), (2, 90, 200)], 1));
        let want = [SectionKind::NvFatbin; 2]
            .into_iter()
            .chain([SectionKind::RelFatbin; 3])
            .collect::<Vec<_>>();
        for piece in [1, 16, 100, file.len()] {
            let mut s = StreamScan::new(SectionKind::NvFatbin, file.len() as u64);
            let mut seen: Vec<SectionKind> = Vec::new();
            for chunk in file.chunks(piece) {
                s.feed(chunk);
                let now: Vec<SectionKind> = s.entries().iter().map(|e| e.section).collect();
                assert_eq!(
                    now[..seen.len()],
                    seen[..],
                    "piece {piece}: a label changed"
                );
                seen = now;
            }
            s.finish();
            assert_eq!(seen, want, "piece {piece}");
            assert_eq!(s.containers_done(), 2);
        }
    }

    #[test]
    fn a_container_cut_short_lists_its_entries_when_finished() {
        let file = container(&[(1, 90, 300), (2, 90, 200)]);
        let mut s = StreamScan::new(SectionKind::NvFatbin, file.len() as u64);
        // The bytes end inside the cubin's ELF header: its kind is not known.
        s.feed(&file[..file.len() - 200 + 8]);
        assert_eq!(s.entries().len(), 0);
        s.finish();
        let got: Vec<(EntryKind, SectionKind)> =
            s.entries().iter().map(|e| (e.kind, e.section)).collect();
        assert_eq!(
            got,
            [
                (EntryKind::Ptx, SectionKind::NvFatbin),
                (EntryKind::Cubin, SectionKind::NvFatbin)
            ]
        );
    }

    #[test]
    fn a_damaged_container_is_said_and_a_coincidental_magic_is_not() {
        let mut file = vec![0u8; 64];
        // A magic with a sane header whose "entry" is garbage: skipped silently.
        file[8..12].copy_from_slice(&CONTAINER_MAGIC.to_le_bytes());
        file[14..16].copy_from_slice(&16u16.to_le_bytes());
        file[16..24].copy_from_slice(&64u64.to_le_bytes());
        file.extend(std::iter::repeat_n(0xFFu8, 64));
        let mut c = container(&[(2, 75, 64), (2, 90, 64)]);
        // The second entry claims more than the container holds.
        let second = 16 + 0x40 + 64;
        c[second + 8..second + 16].copy_from_slice(&u64::MAX.to_le_bytes());
        file.extend_from_slice(&c);
        let mut s = StreamScan::new(SectionKind::NvFatbin, file.len() as u64);
        s.feed(&file);
        assert_eq!(s.entries().len(), 1);
        assert!(
            s.problem().unwrap().contains("do not fit"),
            "{:?}",
            s.problem()
        );
    }
}
