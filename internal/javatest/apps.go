package javatest

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Test jobs, compiled against the library. Each run appends a line to
// <jobParameter>/<item>.log: "item shardingParameter total taskId pid api",
// so a test sees which shards ran, with what, in which JVM.
var jobSources = map[string]string{
	"ejtest/Record.java": `package ejtest;

import java.io.FileWriter;
import java.io.IOException;
import java.lang.management.ManagementFactory;

public final class Record {
    private Record() {
    }

    public static void line(String dir, int item, String param, int total, String taskId, String api) {
        String pid = ManagementFactory.getRuntimeMXBean().getName().split("@")[0];
        try (FileWriter w = new FileWriter(dir + "/" + item + ".log", true)) {
            w.write(item + " " + param + " " + total + " " + taskId + " " + pid + " " + api + "\n");
        } catch (IOException ex) {
            throw new IllegalStateException("cannot record into " + dir, ex);
        }
    }
}
`,
	// The manual's MyJob (§4.2.2), recording its shard; a shard whose
	// parameter is "fail" throws.
	"ejtest/MyJob.java": `package ejtest;

import org.apache.shardingsphere.elasticjob.api.ShardingContext;
import org.apache.shardingsphere.elasticjob.simple.job.SimpleJob;

public class MyJob implements SimpleJob {
    @Override
    public void execute(ShardingContext context) {
        switch (context.getShardingItem()) {
            default:
                Record.line(context.getJobParameter(), context.getShardingItem(), context.getShardingParameter(),
                        context.getShardingTotalCount(), context.getTaskId(), "3.x");
        }
        if ("fail".equals(context.getShardingParameter())) {
            throw new IllegalStateException("no rows for shard " + context.getShardingItem());
        }
    }
}
`,
	// The manual's MyJobDemo (§4.2.3).
	"ejtest/MyJobDemo.java": `package ejtest;

import org.apache.shardingsphere.elasticjob.cloud.api.JobBootstrap;

public class MyJobDemo {
    public static void main(final String[] args) {
        JobBootstrap.execute(new MyJob());
    }
}
`,
	// A dataflow job: three batches per run when streaming (one otherwise).
	"ejtest/FlowJob.java": `package ejtest;

import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.apache.shardingsphere.elasticjob.api.ShardingContext;
import org.apache.shardingsphere.elasticjob.dataflow.job.DataflowJob;
import org.apache.shardingsphere.elasticjob.cloud.api.JobBootstrap;

public class FlowJob implements DataflowJob<String> {
    private int batches;

    @Override
    public List<String> fetchData(ShardingContext context) {
        return ++batches > 3 ? Collections.<String>emptyList() : Arrays.asList("batch" + batches);
    }

    @Override
    public void processData(ShardingContext context, List<String> data) {
        Record.line(context.getJobParameter(), context.getShardingItem(), data.get(0), context.getShardingTotalCount(), context.getTaskId(), "dataflow");
    }

    public static void main(String[] args) {
        JobBootstrap.execute(new FlowJob());
    }
}
`,
	// A 2.x job (com.dangdang names), started by the 2.x JobBootstrap.execute().
	"ejtest/LegacyJob.java": `package ejtest;

import com.dangdang.ddframe.job.api.ShardingContext;
import com.dangdang.ddframe.job.api.simple.SimpleJob;

public class LegacyJob implements SimpleJob {
    @Override
    public void execute(ShardingContext context) {
        Record.line(context.getJobParameter(), context.getShardingItem(), context.getShardingParameter(),
                context.getShardingTotalCount(), context.getTaskId(), "2.x");
        if ("fail".equals(context.getShardingParameter())) {
            throw new IllegalStateException("no rows for shard " + context.getShardingItem());
        }
    }
}
`,
	// A 2.x dataflow job: three batches per run when streaming (one otherwise).
	"ejtest/LegacyFlowJob.java": `package ejtest;

import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import com.dangdang.ddframe.job.api.ShardingContext;
import com.dangdang.ddframe.job.api.dataflow.DataflowJob;

public class LegacyFlowJob implements DataflowJob<String> {
    private int batches;

    @Override
    public List<String> fetchData(ShardingContext context) {
        return ++batches > 3 ? Collections.<String>emptyList() : Arrays.asList("batch" + batches);
    }

    @Override
    public void processData(ShardingContext context, List<String> data) {
        Record.line(context.getJobParameter(), context.getShardingItem(), data.get(0), context.getShardingTotalCount(), context.getTaskId(), "2.x-dataflow");
    }
}
`,
	// The 2.x LocalTaskExecutor runs one shard of a job in this JVM:
	// args are the output directory, the job type (SIMPLE, DATAFLOW,
	// SCRIPT), the job class or script command line, the shard, and
	// "streaming" for a streaming dataflow job.
	"ejtest/LegacyLocal.java": `package ejtest;

import com.dangdang.ddframe.job.cloud.executor.local.LocalCloudJobConfiguration;
import com.dangdang.ddframe.job.cloud.executor.local.LocalTaskExecutor;
import com.dangdang.ddframe.job.config.JobCoreConfiguration;
import com.dangdang.ddframe.job.config.JobTypeConfiguration;
import com.dangdang.ddframe.job.config.dataflow.DataflowJobConfiguration;
import com.dangdang.ddframe.job.config.script.ScriptJobConfiguration;
import com.dangdang.ddframe.job.config.simple.SimpleJobConfiguration;

public class LegacyLocal {
    public static void main(String[] args) {
        JobCoreConfiguration core = JobCoreConfiguration.newBuilder("legacy_local", "0/5 * * * * ?", 3)
                .shardingItemParameters("0=Beijing,1=Shanghai,2=fail").jobParameter(args[0]).build();
        JobTypeConfiguration type;
        if ("SCRIPT".equals(args[1])) {
            type = new ScriptJobConfiguration(core, args[2]);
        } else if ("DATAFLOW".equals(args[1])) {
            type = new DataflowJobConfiguration(core, args[2], args.length > 4 && "streaming".equals(args[4]));
        } else {
            type = new SimpleJobConfiguration(core, args[2]);
        }
        new LocalTaskExecutor(new LocalCloudJobConfiguration(type, Integer.parseInt(args[3]))).execute();
        System.out.println("local done");
    }
}
`,
	"ejtest/LegacyMain.java": `package ejtest;

import com.dangdang.ddframe.job.cloud.api.JobBootstrap;

public class LegacyMain {
    public static void main(String[] args) {
        JobBootstrap.execute();
    }
}
`,
	// For the benchmarks: execute prints "exec <wall clock ns>" first thing.
	"ejtest/StampJob.java": `package ejtest;

import java.time.Instant;
import org.apache.shardingsphere.elasticjob.api.ShardingContext;
import org.apache.shardingsphere.elasticjob.cloud.api.JobBootstrap;
import org.apache.shardingsphere.elasticjob.simple.job.SimpleJob;

public class StampJob implements SimpleJob {
    @Override
    public void execute(ShardingContext context) {
        Instant now = Instant.now();
        System.out.println("exec " + (now.getEpochSecond() * 1000000000L + now.getNano()));
    }

    public static void main(String[] args) {
        JobBootstrap.execute(new StampJob());
    }
}
`,
	// The 3.x typed jobs: JobBootstrap.execute("HTTP") or ("SCRIPT") from main (args[0]).
	"ejtest/TypedMain.java": `package ejtest;

import org.apache.shardingsphere.elasticjob.cloud.api.JobBootstrap;

public class TypedMain {
    public static void main(String[] args) {
        JobBootstrap.execute(args[0]);
    }
}
`,
	// LocalTaskExecutor runs shard 1 of MyJob in this JVM.
	"ejtest/Local.java": `package ejtest;

import org.apache.shardingsphere.elasticjob.api.JobConfiguration;
import org.apache.shardingsphere.elasticjob.cloud.executor.local.LocalTaskExecutor;

public class Local {
    public static void main(String[] args) {
        JobConfiguration config = JobConfiguration.newBuilder("local_job", 3).shardingItemParameters("0=a,1=b,2=fail")
                .jobParameter(args[0]).jobErrorHandlerType(args.length > 1 ? args[1] : null).build();
        new LocalTaskExecutor(new MyJob(), config, Integer.parseInt(args.length > 2 ? args[2] : "1")).execute();
        System.out.println("local done");
    }
}
`,
}

// Stand-ins for the original's jars, with its names, failing as it does
// without Mesos: its JobBootstrap loads Mesos' native library.
var originalSources = map[string]string{
	"org/apache/shardingsphere/elasticjob/api/ElasticJob.java": `package org.apache.shardingsphere.elasticjob.api;
public interface ElasticJob {
}
`,
	"org/apache/shardingsphere/elasticjob/api/ShardingContext.java": `package org.apache.shardingsphere.elasticjob.api;
public final class ShardingContext {
    public String getJobName() { throw new UnsupportedOperationException(); }
    public String getTaskId() { throw new UnsupportedOperationException(); }
    public int getShardingTotalCount() { throw new UnsupportedOperationException(); }
    public String getJobParameter() { throw new UnsupportedOperationException(); }
    public int getShardingItem() { throw new UnsupportedOperationException(); }
    public String getShardingParameter() { throw new UnsupportedOperationException(); }
}
`,
	"org/apache/shardingsphere/elasticjob/simple/job/SimpleJob.java": `package org.apache.shardingsphere.elasticjob.simple.job;
import org.apache.shardingsphere.elasticjob.api.ElasticJob;
import org.apache.shardingsphere.elasticjob.api.ShardingContext;
public interface SimpleJob extends ElasticJob {
    void execute(ShardingContext shardingContext);
}
`,
	"org/apache/mesos/MesosExecutorDriver.java": `package org.apache.mesos;
public class MesosExecutorDriver {
    static {
        System.loadLibrary("mesos");
    }
    public MesosExecutorDriver(Object executor) {
    }
    public int run() {
        return 0;
    }
}
`,
	"org/apache/shardingsphere/elasticjob/cloud/api/JobBootstrap.java": `package org.apache.shardingsphere.elasticjob.cloud.api;
import org.apache.mesos.MesosExecutorDriver;
import org.apache.shardingsphere.elasticjob.api.ElasticJob;
public final class JobBootstrap {
    public static void execute(final ElasticJob elasticJob) {
        MesosExecutorDriver driver = new MesosExecutorDriver(elasticJob);
        System.exit(driver.run());
    }
    public static void execute(final String elasticJobType) {
        System.exit(new MesosExecutorDriver(elasticJobType).run());
    }
}
`,
}

// Built are the test apps.
type Built struct {
	// Lib is the Java library.
	Lib string
	// AppJar holds the test jobs (ejtest.*), compiled against Lib.
	AppJar string
	// OriginalApp is the root of an app built against the original's jars:
	// bin/start.sh runs com.example.MyJobDemo with lib/* as class path;
	// lib/ holds elasticjob-api-3.0.1.jar, elasticjob-simple-executor-3.0.1.jar,
	// elasticjob-cloud-executor-3.0.1.jar, mesos-1.11.0.jar (stand-ins) and
	// my-job-1.0.jar (MyJob and MyJobDemo, recording as ejtest.MyJob does).
	OriginalApp string
}

// StartScript is the original app's bin/start.sh, as its users wrote them.
const StartScript = `#!/bin/sh
cd "$(dirname "$0")/.."
exec java -cp "lib/*" com.example.MyJobDemo "$@"
`

// Build builds the library and the test apps (once per machine and content).
func Build(t testing.TB) Built {
	t.Helper()
	lib := Jar(t)
	classes := Compile(t, jobSources, lib)
	b := Built{Lib: lib}
	b.AppJar = cached(t, "appjar-"+filepath.Base(classes), func(out string) error {
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		return run("", "jar", "--create", "--date=2026-01-01T00:00:00Z", "--file", filepath.Join(out, "ejtest.jar"), "-C", classes, ".")
	}) + "/ejtest.jar"
	orig := Compile(t, originalSources)
	user := Compile(t, map[string]string{
		"com/example/MyJob.java": `package com.example;

import java.io.FileWriter;
import java.io.IOException;
import org.apache.shardingsphere.elasticjob.api.ShardingContext;
import org.apache.shardingsphere.elasticjob.simple.job.SimpleJob;

public class MyJob implements SimpleJob {
    @Override
    public void execute(ShardingContext context) {
        String pid = java.lang.management.ManagementFactory.getRuntimeMXBean().getName().split("@")[0];
        try (FileWriter w = new FileWriter(context.getJobParameter() + "/" + context.getShardingItem() + ".log", true)) {
            w.write(context.getShardingItem() + " " + context.getShardingParameter() + " " + context.getShardingTotalCount() + " "
                    + context.getTaskId() + " " + pid + " original\n");
        } catch (IOException ex) {
            throw new IllegalStateException(ex);
        }
    }
}
`,
		"com/example/MyJobDemo.java": `package com.example;

import org.apache.shardingsphere.elasticjob.cloud.api.JobBootstrap;

public class MyJobDemo {
    public static void main(final String[] args) {
        JobBootstrap.execute(new MyJob());
    }
}
`,
	}, orig)
	b.OriginalApp = cached(t, "original-"+filepath.Base(orig)+"-"+filepath.Base(user), func(out string) error {
		libDir := filepath.Join(out, "lib")
		if err := os.MkdirAll(filepath.Join(out, "bin"), 0o755); err != nil {
			return err
		}
		if err := os.MkdirAll(libDir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, "bin", "start.sh"), []byte(StartScript), 0o755); err != nil {
			return err
		}
		jars := map[string][]string{
			"elasticjob-api-3.0.1.jar":             {"org/apache/shardingsphere/elasticjob/api"},
			"elasticjob-simple-executor-3.0.1.jar": {"org/apache/shardingsphere/elasticjob/simple"},
			"elasticjob-cloud-executor-3.0.1.jar":  {"org/apache/shardingsphere/elasticjob/cloud"},
			"mesos-1.11.0.jar":                     {"org/apache/mesos"},
		}
		for name, dirs := range jars {
			args := []string{"--create", "--date=2026-01-01T00:00:00Z", "--file", filepath.Join(libDir, name)}
			for _, d := range dirs {
				args = append(args, "-C", orig, d)
			}
			if err := run("", "jar", args...); err != nil {
				return err
			}
		}
		return run("", "jar", "--create", "--date=2026-01-01T00:00:00Z", "--file", filepath.Join(libDir, "my-job-1.0.jar"), "-C", user, "com")
	})
	return b
}

// Example is examples/java packaged as make examples packages it: a tar.gz of
// my-job/bin/*.sh and my-job/lib/my-job.jar, compiled against the library.
func Example(t testing.TB) string {
	t.Helper()
	lib := Jar(t)
	root := filepath.Join(Root(t), "examples", "java")
	srcs := map[string]string{}
	files, _ := filepath.Glob(filepath.Join(root, "src", "com", "example", "*.java"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		srcs["com/example/"+filepath.Base(f)] = string(b)
	}
	scripts, _ := filepath.Glob(filepath.Join(root, "bin", "*.sh"))
	var key []string
	for _, s := range scripts {
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		key = append(key, filepath.Base(s), string(b))
	}
	classes := Compile(t, srcs, lib)
	sum := sha256.Sum256([]byte(strings.Join(key, "\x00") + classes))
	dir := cached(t, "example-"+hex.EncodeToString(sum[:8]), func(out string) error {
		app := filepath.Join(out+".app", "my-job")
		defer os.RemoveAll(out + ".app")
		if err := os.MkdirAll(filepath.Join(app, "bin"), 0o755); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(app, "lib"), 0o755); err != nil {
			return err
		}
		for _, s := range scripts {
			b, _ := os.ReadFile(s)
			if err := os.WriteFile(filepath.Join(app, "bin", filepath.Base(s)), b, 0o755); err != nil {
				return err
			}
		}
		if err := run("", "jar", "--create", "--date=2026-01-01T00:00:00Z", "--file", filepath.Join(app, "lib", "my-job.jar"), "-C", classes, "."); err != nil {
			return err
		}
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		return run("", "tar", "-czf", filepath.Join(out, "java-app.tar.gz"), "-C", filepath.Dir(app), "my-job")
	})
	return filepath.Join(dir, "java-app.tar.gz")
}
