// Package upload is ejbench's package scenario: a large app package
// uploaded, then a job of it triggered until it starts.
package upload
