// Package archtest holds the import-direction tests of the module (the
// package itself is empty): the pure packages (the domain and the
// decisions: app, jobs, jobs/cron, offers, workflow, engine) import only
// the standard library and each other, so they stay free of I/O, clocks and
// drivers and can be table-, property- and scenario-tested; the history
// tree (history/...) and metrics hear the scheduler through package
// observe and import neither scheduler nor, for scheduler, history;
// nothing above the engines imports an engine, and nothing under engine/
// imports api. layers_test.go: history and metrics do not reach the
// deadline watcher (its vocabulary is in observe), engine/kube does not
// reach the registry, the module's folders form no circle, and only the
// soak's runner imports internal/soak.
//
// The graph is read from the source with go/build (the non-test files of
// every package of the module, under the default build context), so the
// tests need neither the network nor the go command. A new pure package is
// added to pure in archtest_test.go. TestNoMachinePaths keeps one machine's
// absolute paths out of the tree. pkgdoc_test.go checks that every package
// has a doc comment and a row in docs/architecture.md's package table.
package archtest
