package main
import (
 _ "github.com/mesos/mesos-go/api/v1/lib"
 _ "github.com/mesos/mesos-go/api/v1/lib/httpcli/httpsched"
 _ "github.com/mesos/mesos-go/api/v1/lib/httpcli/httpexec"
 _ "github.com/mesos/mesos-go/api/v1/lib/encoding/codecs"
 _ "github.com/mesos/mesos-go/api/v1/lib/executor/calls"
 _ "github.com/mesos/mesos-go/api/v1/lib/scheduler/calls"
 _ "github.com/mesos/mesos-go/api/v1/lib/extras/executor/eventrules"
 _ "github.com/gin-gonic/gin"
 _ "github.com/go-zookeeper/zk"
 _ "modernc.org/sqlite"
 _ "github.com/pressly/goose/v3"
 _ "github.com/jmoiron/sqlx"
 _ "github.com/go-sql-driver/mysql"
 _ "github.com/prometheus/client_golang/prometheus"
 _ "github.com/robfig/cron/v3"
)
