// Command codestats prints the module's size figures read with go/parser:
// non-test Go files and lines, files over 300 lines, functions over 60
// lines, and the types with more than 40 methods (by name, with their
// counts). Generated files and testdata are left out. Run it from the
// module root: go run ./internal/codestats [-tests] [dir]. With -params it
// lists instead the plain functions' named parameters that their bodies
// never use (dead parameters; methods are left out).
package main
