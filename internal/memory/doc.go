// Package memory knows how much memory this process may use, so that a run
// is refused with a clear message before it allocates more than that,
// rather than ended by the Go runtime half-way.
//
// The limit is the smallest of the machine's memory (MemTotal), the
// control group's limit (containers, job schedulers), the room left under
// the process's address-space and data limits (ulimit -v and -d: the limit
// less what the process maps already) and the HETSGD_MEMORY_LIMIT
// environment variable (bytes, with an optional K, M, G or T suffix in
// powers of 1024), for shared machines and tests. Govern makes the garbage
// collector keep the heap under the same limit.
package memory
