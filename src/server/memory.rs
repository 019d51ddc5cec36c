//! How much memory this process may use: the machine's (`MemTotal`) or, in a container or a
//! systemd unit with `MemoryMax=`, its cgroup's limit, whichever is lower. Start-up warns when
//! `INGEST_BUFFER_MAX_BYTES` does not fit in it with room to spare: a process killed for memory
//! loses every batch it held in memory, accepted ones included in `buffer` durability mode.

use std::path::Path;

/// The lower of the machine's memory and the cgroup's limit, in bytes; `None` if neither can be
/// read (not Linux, or `/proc` not mounted).
pub fn memory_limit() -> Option<u64> {
    let read = |p: &Path| std::fs::read_to_string(p).ok();
    let cgroups = read(Path::new("/proc/self/cgroup")).unwrap_or_default();
    let meminfo = read(Path::new("/proc/meminfo")).unwrap_or_default();
    limit_from(&cgroups, &meminfo, read)
}

/// `memory_limit` on given texts: `cgroups` is `/proc/self/cgroup`, `meminfo` is `/proc/meminfo`,
/// and `read` reads a cgroup file.
fn limit_from(cgroups: &str, meminfo: &str, read: impl Fn(&Path) -> Option<String>) -> Option<u64> {
    let total = mem_total(meminfo);
    let cgroup = cgroup_limit(cgroups, read);
    match (total, cgroup) {
        (Some(t), Some(c)) => Some(t.min(c)),
        (t, c) => t.or(c),
    }
}

/// `MemTotal` of `/proc/meminfo`, in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib = line["MemTotal:".len()..].trim().strip_suffix("kB")?.trim();
    kib.parse::<u64>().ok()?.checked_mul(1024)
}

/// The memory limit of this process's cgroup: version 2's `memory.max` or version 1's
/// `memory.limit_in_bytes`, at the cgroup's path under the usual mount points and then at the
/// mount's root (what a container with a cgroup namespace sees of its own cgroup). `None` when
/// no file gives a number (`max`, version 2's "no limit"). Version 1 writes "no limit" as a
/// number near 2^63, which `limit_from`'s minimum with `MemTotal` takes care of.
fn cgroup_limit(cgroups: &str, read: impl Fn(&Path) -> Option<String>) -> Option<u64> {
    let mut candidates = Vec::new();
    for line in cgroups.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let path = path.trim_end_matches('/');
        if controllers.is_empty() {
            candidates.push(format!("/sys/fs/cgroup{path}/memory.max"));
            candidates.push("/sys/fs/cgroup/memory.max".to_owned());
        } else if controllers.split(',').any(|c| c == "memory") {
            candidates.push(format!("/sys/fs/cgroup/memory{path}/memory.limit_in_bytes"));
            candidates.push("/sys/fs/cgroup/memory/memory.limit_in_bytes".to_owned());
        }
    }
    candidates
        .iter()
        .filter_map(|p| read(Path::new(p)))
        .find_map(|text| text.trim().parse::<u64>().ok())
}

/// Whether a memory buffer of `buffer_bytes` leaves too little of `limit`: the process holds the
/// buffer, an insert block being copied out of it (up to a quarter of it, `INGEST_FLUSH_MAX_BYTES`'s
/// bound), bodies being read and decoded, and the key set; past half the limit for the buffer
/// alone, a burst can get the process killed for memory.
pub fn buffer_too_large(buffer_bytes: u64, limit: u64) -> bool {
    buffer_bytes > limit / 2
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::Path;

    use super::{buffer_too_large, limit_from};

    const MEMINFO: &str = "MemTotal:       24683652 kB\nMemFree:         1000 kB\n";
    const TOTAL: u64 = 24_683_652 * 1024;

    fn files(entries: &[(&str, &str)]) -> impl Fn(&Path) -> Option<String> {
        let map: HashMap<String, String> = entries
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect();
        move |p: &Path| map.get(p.to_str().unwrap()).cloned()
    }

    #[test]
    fn a_cgroup_v2_limit_below_the_machine_is_the_limit() {
        let got = limit_from(
            "0::/system.slice/traceingest.service\n",
            MEMINFO,
            files(&[(
                "/sys/fs/cgroup/system.slice/traceingest.service/memory.max",
                "1073741824\n",
            )]),
        );
        assert_eq!(got, Some(1 << 30));
    }

    /// A container with a cgroup namespace sees its own cgroup at the mount's root, while
    /// `/proc/self/cgroup` may still name a path that does not exist under the mount.
    #[test]
    fn a_container_sees_its_limit_at_the_mount_root() {
        let v2 = limit_from(
            "0::/\n",
            MEMINFO,
            files(&[("/sys/fs/cgroup/memory.max", "536870912\n")]),
        );
        assert_eq!(v2, Some(512 << 20));
        let v1 = limit_from(
            "4:memory:/process_api/fd17\n0::/\n",
            MEMINFO,
            files(&[("/sys/fs/cgroup/memory/memory.limit_in_bytes", "268435456\n")]),
        );
        assert_eq!(v1, Some(256 << 20));
    }

    #[test]
    fn no_cgroup_limit_leaves_the_machine_s_memory() {
        // Version 2's "max", and version 1's near-2^63 "no limit".
        let v2 = limit_from(
            "0::/user.slice\n",
            MEMINFO,
            files(&[("/sys/fs/cgroup/user.slice/memory.max", "max\n")]),
        );
        assert_eq!(v2, Some(TOTAL));
        let v1 = limit_from(
            "7:cpu,memory:/\n",
            MEMINFO,
            files(&[(
                "/sys/fs/cgroup/memory/memory.limit_in_bytes",
                "9223372036854771712\n",
            )]),
        );
        assert_eq!(v1, Some(TOTAL));
        // Nothing readable at all: the machine's memory.
        assert_eq!(limit_from("0::/\n", MEMINFO, files(&[])), Some(TOTAL));
    }

    #[test]
    fn without_proc_there_is_no_limit_to_check() {
        assert_eq!(limit_from("", "", files(&[])), None);
        assert_eq!(limit_from("", "MemTotal: junk\n", files(&[])), None);
        // A cgroup limit alone still counts.
        assert_eq!(
            limit_from(
                "0::/\n",
                "",
                files(&[("/sys/fs/cgroup/memory.max", "4096\n")])
            ),
            Some(4096)
        );
    }

    /// The limit read on this machine is at most its `MemTotal` (whatever cgroup it runs in).
    #[test]
    fn this_machine_has_a_limit_within_its_memory() {
        let limit = super::memory_limit().expect("Linux with /proc");
        let total = super::mem_total(&std::fs::read_to_string("/proc/meminfo").unwrap()).unwrap();
        assert!(limit > 0 && limit <= total, "{limit} of {total}");
    }

    #[test]
    fn a_buffer_past_half_the_limit_is_too_large() {
        assert!(!buffer_too_large(512 << 20, 1 << 30));
        assert!(buffer_too_large((512 << 20) + 1, 1 << 30));
        assert!(buffer_too_large(512 << 20, 512 << 20));
    }
}
