#!/bin/sh
# Builds the Java library, elasticjob-cloud-executor.jar, from sdk/java/src with the JDK
# alone (javac --release 8: old apps compile against it) into the directory $1 (default
# dist), with its pom.xml beside it. Reproducible: entries dated 2026-01-01.
set -eu
out=${1:-dist}
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v javac >/dev/null 2>&1; then
	echo "make java needs a JDK (javac): apt-get install openjdk-17-jdk-headless" >&2
	exit 1
fi
mkdir -p "$out"
tmp=$(mktemp -d "$out/.java-build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
find "$here/src/main/java" -name '*.java' | sort >"$tmp/sources"
javac --release 8 -Xlint:-options -encoding UTF-8 -d "$tmp/classes" @"$tmp/sources"
version=$(sed -n 's:.*<version>\(.*\)</version>.*:\1:p' "$here/pom.xml" | head -1)
cat >"$tmp/manifest" <<MF
Main-Class: com.github.ejcloud.elasticjob.runtime.Runner
Implementation-Title: elasticjob-cloud-executor (ElasticJob-Cloud in Go)
Implementation-Version: $version
MF
jar --create --date=2026-01-01T00:00:00Z --file "$tmp/elasticjob-cloud-executor.jar" --manifest "$tmp/manifest" -C "$tmp/classes" .
cp "$here/pom.xml" "$tmp/pom.xml"
mv -f "$tmp/elasticjob-cloud-executor.jar" "$out/elasticjob-cloud-executor.jar"
mv -f "$tmp/pom.xml" "$out/pom.xml"
echo "built $out/elasticjob-cloud-executor.jar ($version)"
