// Package safeopen opens files in directories a tenant can write, for code
// that runs with more privilege than the tenant (the embedded agent as
// root serving a sandbox's files, collecting sandboxes). A tenant owns
// its sandbox: it can put a symbolic link, a hard link, a FIFO or a
// directory where the agent expects its log, so every open here resolves
// the path beneath a trusted directory without following any link in any
// component (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|
// RESOLVE_NO_MAGICLINKS, or O_NOFOLLOW component by component where the
// kernel lacks openat2), never blocks (O_NONBLOCK: a FIFO opens at once
// and is then refused), and hands back a file only when it is a regular
// file of the directory's owner, within a size bound. A hard link to
// someone else's file is refused by its owner; one to the tenant's own
// file reads what the tenant could read anyway.
package safeopen
