#!/bin/sh
# Demo ElasticJob-Cloud app: prints the shard it was handed. The executor
# passes the sharding context as ELASTICJOB_* environment variables and as
# a JSON last argument.
echo "job=${ELASTICJOB_JOB_NAME} shard=${ELASTICJOB_SHARDING_ITEM}/${ELASTICJOB_SHARDING_TOTAL_COUNT} parameter='${ELASTICJOB_SHARDING_PARAMETER}' task=${ELASTICJOB_TASK_ID}"
for last; do :; done
echo "context=${last}"
