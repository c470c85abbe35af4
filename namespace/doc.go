// Package namespace is the vocabulary of teams sharing one scheduler: a
// namespace's name and record (the capacity it is promised), and the one
// way a name inside a namespace becomes the scheduler-wide key its jobs,
// apps and workflows are known by.
//
// The default namespace holds everything that existed before namespaces:
// its keys are the bare names, so its registry paths, task ids and history
// are the original's. Any other namespace's key is "{namespace}~{name}":
// '~' is in neither charset (names are [A-Za-z0-9._-], namespaces DNS
// labels), so a key names exactly one namespace and one name, and no name
// of the default namespace looks like a key of another. Task ids carry
// the key ("pay~nightly@-@0@-@READY@-@…"), so they stay unique across
// namespaces.
package namespace
