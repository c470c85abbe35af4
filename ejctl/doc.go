// Package ejctl is the command-line client of the scheduler's REST API
// (bin/ejctl): apps and jobs (list, show, delete, disable, enable), app
// publishing from a directory packed reproducibly, declarative apply of
// YAML/JSON files with a diff, triggers that wait for their run (for CI),
// task views, logs and history.
//
// The address and token come from flags (--addr, --token), then the
// environment (EJCTL_ADDR, EJCTL_TOKEN), then the config file
// (--config, EJCTL_CONFIG, or $XDG_CONFIG_HOME/ejctl/config.json, mode
// 0600, written by "ejctl login"); the address defaults to
// http://127.0.0.1:8899.
//
// Exit codes: 0 success, 1 failure (the API's message is printed), 2 usage
// error, 3 a waited run failed or was cancelled, 4 a wait timed out, 5 a
// waited run can never start (never_fits: larger than the whole cluster).
//
// Run is the whole program; cmd/ejctl only wires it to the process.
package ejctl
