// Package extract unpacks a fetched app package into the sandbox, once per
// distinct content checksum, refusing anything that could write outside it.
//
// Layout: PARENT/<first 16 hex digits of sha256>/ holds the unpacked app;
// it is built in PARENT/.tmp-<sha>-*/ and renamed into place when complete,
// under the lock file PARENT/.<sha>.lock, so a later task (or a concurrent
// one) reuses it.
//
// The format is detected from magic bytes, never from the file name: zip,
// gzip, bzip2 and xz compressed tar, plain tar. xz is decompressed by running
// `xz -dc` (Debian package xz-utils); the standard library has no xz reader.
// A single program (a script starting with #!, or an ELF executable) is
// copied under the URL's base name and made executable. Anything else
// (random bytes named .tgz, a text file without a #! line, an empty file)
// is refused with an error wrapping app.ErrNotPackage ("not a tar, tar.gz
// or zip archive") rather than handed to /bin/sh (app.SniffPackage).
//
// Safety: an entry with a `..` component or an absolute path, a symlink or
// hard link whose target leaves the extraction directory (symlinks are
// resolved again once the tree is complete, through chains of links as the
// kernel would follow them, so x -> . with y -> x/.. is refused), a device, FIFO or
// other special file, more than Limits.MaxEntries entries, or more than
// Limits.MaxBytes bytes actually written fails the whole extraction and the
// temporary directory is removed. All writes go through an os.Root, so even
// a link chain the checks missed cannot make a write land outside.
package extract
