// Package bytesize formats and parses byte counts such as "1 GiB" and "512MiB".
package bytesize
