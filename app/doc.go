// Package app holds the app domain: an app is a packaged program (appURL)
// plus a bootstrap script and the resources of its executor, charged once per
// agent. See SPEC.md §2.
package app
