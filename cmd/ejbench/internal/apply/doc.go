// Package apply is ejbench's apply scenario: `ejctl apply -f DIR` of 1,000
// job files.
package apply
