#!/bin/sh
# Runs com.example.MyJobDemo with the app's jars, as ElasticJob-Cloud apps' start scripts do.
cd "$(dirname "$0")/.."
exec java -Xmx64m -cp "lib/*" com.example.MyJobDemo "$@"
