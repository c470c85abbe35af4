// Package fetch downloads an app package (http, https or file URL) into a
// content-checked cache shared by every executor on the agent.
//
// Cache layout, one entry per URL:
//
//	CACHE/<sha256(url)>/lock       flock(2) held while the entry is fetched (or evicted)
//	CACHE/<sha256(url)>/use        shared flock(2) held while a Blob of it is in use; mtime = last use
//	CACHE/<sha256(url)>/blob       the package bytes
//	CACHE/<sha256(url)>/meta.json  {url, etag, lastModified, sha256, size, modTime, fetchedAt}
//
// With the cache on, an http(s) entry is revalidated with If-None-Match and
// If-Modified-Since (304 → reuse); a file entry is reused while the source's
// size and mtime are unchanged. With the cache off every fetch downloads
// afresh into a scratch directory that Blob.Release removes.
//
// Downloads stream to a temporary file in the entry directory and are renamed
// into place when complete, so a crash never leaves a half blob. They are
// limited in size and time, and retried (network errors and 5xx, never 4xx).
//
// With MaxCacheBytes set, each cached fetch then evicts the least recently
// used entries while the cache is larger, skipping any entry being fetched
// or in use (a task extracting it); an eviction moves the entry aside
// before deleting it, and a fetcher that was waiting for its lock starts
// afresh.
package fetch
