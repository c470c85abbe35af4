// Package packages hosts app packages in the scheduler: an uploaded tarball
// is stored content-addressed (data_dir/packages/{sha256}) and served to
// agents without credentials at
//
//	GET /packages/{sha256}/{token}/{filename}
//
// where token is an HMAC of the sha256 under a key shared by every scheduler
// instance through the registry (/packages/key), so knowing a package's hash
// (printed by CI, by ejctl) is not enough to download it: the URL is a
// capability handed out only through the app's appURL.
//
// Every scheduler instance keeps a copy of every package an app names: a
// Replicator follows the registry's apps and pulls a missing package from
// another instance (Options.Peers), verifying its sha256, with bounded
// retries; a request for a package an instance lacks pulls it on the spot.
// Packages no app names are removed after a grace period, so an in-flight
// launch or a peer's pull of the previous version is not broken.
//
// The stored appURL names the uploading instance; Host.Resolve rewrites a
// hosted URL to this instance's base URL, and the leader applies it at
// launch (scheduler.Options.ResolveAppURL), so a dead uploader never pins a
// package.
package packages
