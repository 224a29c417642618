//! A set of CPU ids, as the kernel prints it in `Cpus_allowed_list` ("0-3,8"). Small and
//! hashable, so the fairness model can group tasks by the CPUs they may use.

use std::fmt;

use smallvec::SmallVec;

/// CPU ids as a bitmap (bit k of word k/64 = CPU k). Up to 256 CPUs without an allocation:
/// the model copies a set per task per tick.
#[derive(Default, Eq, PartialOrd, Ord)]
pub struct CpuSet {
    words: SmallVec<[u64; 4]>,
}

// Clone, equality and hashing by hand, on the words as a slice (what the derives do): the
// derived clone goes through SmallVec's generic extend and the derived equality calls memcmp,
// each ten times the cost of copying or comparing the one word a set nearly always is, a
// few thousand times a tick at 1,000 tasks.
impl Clone for CpuSet {
    fn clone(&self) -> CpuSet {
        CpuSet {
            words: SmallVec::from_slice(&self.words),
        }
    }
}

impl PartialEq for CpuSet {
    fn eq(&self, other: &CpuSet) -> bool {
        self.words.len() == other.words.len()
            && self.words.iter().zip(&other.words).all(|(a, b)| a == b)
    }
}

impl std::hash::Hash for CpuSet {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.words.as_slice().hash(state);
    }
}

impl CpuSet {
    pub fn new() -> CpuSet {
        CpuSet::default()
    }

    /// CPUs 0..n.
    pub fn first(n: usize) -> CpuSet {
        let mut s = CpuSet::new();
        for c in 0..n {
            s.insert(c as u32);
        }
        s
    }

    /// Just CPU `cpu`.
    pub fn one(cpu: u32) -> CpuSet {
        let mut s = CpuSet::new();
        s.insert(cpu);
        s
    }

    pub fn insert(&mut self, cpu: u32) {
        let w = cpu as usize / 64;
        if self.words.len() <= w {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1 << (cpu % 64);
    }

    pub fn contains(&self, cpu: u32) -> bool {
        self.words
            .get(cpu as usize / 64)
            .is_some_and(|w| w & (1 << (cpu % 64)) != 0)
    }

    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|w| *w == 0)
    }

    /// Every CPU of `self` is in `other`.
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.words
            .iter()
            .enumerate()
            .all(|(i, w)| w & !other.words.get(i).copied().unwrap_or(0) == 0)
    }

    /// Adds every CPU of `other`, in place (no new set per call, for per-thread loops).
    pub(crate) fn add_all(&mut self, other: &CpuSet) {
        if self.words.len() < other.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        for (w, o) in self.words.iter_mut().zip(&other.words) {
            *w |= o;
        }
    }

    pub(crate) fn union(&self, other: &CpuSet) -> CpuSet {
        let n = self.words.len().max(other.words.len());
        let mut s = CpuSet {
            words: (0..n)
                .map(|i| {
                    self.words.get(i).copied().unwrap_or(0)
                        | other.words.get(i).copied().unwrap_or(0)
                })
                .collect(),
        };
        s.trim();
        s
    }

    pub(crate) fn intersection(&self, other: &CpuSet) -> CpuSet {
        let mut s = CpuSet {
            words: self
                .words
                .iter()
                .zip(&other.words)
                .map(|(a, b)| a & b)
                .collect(),
        };
        s.trim();
        s
    }

    fn trim(&mut self) {
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }

    /// The CPU ids in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            (0..64u32)
                .filter(move |b| w & (1 << b) != 0)
                .map(move |b| i as u32 * 64 + b)
        })
    }

    /// Parses a CPU list as the kernel prints it and as taskset and cpusets take it: "0-3,8",
    /// "1", "" (empty), blanks around the parts allowed. The one parser of CPU lists: the
    /// probe's (`Cpus_allowed_list`) and the knob editor's; the message says what is wrong.
    pub fn parse(text: &str) -> Result<CpuSet, String> {
        let mut s = CpuSet::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bad = || format!("`{part}` is not a CPU number or range (write e.g. 0,2 or 0-3)");
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (a.trim().parse::<u32>(), b.trim().parse::<u32>()),
                None => (part.parse::<u32>(), part.parse::<u32>()),
            };
            let (Ok(lo), Ok(hi)) = (lo, hi) else {
                return Err(bad());
            };
            // A list longer than any machine's CPUs is not a CPU list.
            if hi < lo || hi >= 65_536 {
                return Err(format!("`{part}` is not a valid CPU range"));
            }
            for c in lo..=hi {
                s.insert(c);
            }
        }
        Ok(s)
    }

    /// A CPU list as the kernel prints it, or None.
    pub fn parse_list(text: &str) -> Option<CpuSet> {
        CpuSet::parse(text).ok()
    }
}

impl FromIterator<u32> for CpuSet {
    fn from_iter<I: IntoIterator<Item = u32>>(cpus: I) -> CpuSet {
        let mut set = CpuSet::new();
        for c in cpus {
            set.insert(c);
        }
        set
    }
}

impl fmt::Display for CpuSet {
    /// The kernel's list form: ranges joined by commas.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<u32> = self.iter().collect();
        let mut first = true;
        let mut i = 0;
        while i < ids.len() {
            let mut j = i;
            while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
                j += 1;
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if j == i {
                write!(f, "{}", ids[i])?;
            } else {
                write!(f, "{}-{}", ids[i], ids[j])?;
            }
            i = j + 1;
        }
        Ok(())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_round_trip() {
        for text in ["0-3,8", "1", "", "0,2,4-5,63-65"] {
            assert_eq!(CpuSet::parse_list(text).unwrap().to_string(), text);
        }
        assert_eq!(CpuSet::parse_list("0-1\n").unwrap().len(), 2);
        assert!(CpuSet::parse_list("3-1").is_none());
        assert!(CpuSet::parse_list("x").is_none());
    }

    #[test]
    fn set_relations() {
        let a = CpuSet::parse_list("0").unwrap();
        let all = CpuSet::first(2);
        assert!(a.is_subset(&all) && !all.is_subset(&a));
        assert_eq!(a.union(&CpuSet::parse_list("1").unwrap()), all);
        assert_eq!(all.intersection(&a), a);
        assert!(CpuSet::parse_list("5")
            .unwrap()
            .intersection(&all)
            .is_empty());
        assert_eq!(all.iter().collect::<Vec<_>>(), vec![0, 1]);
    }
}
