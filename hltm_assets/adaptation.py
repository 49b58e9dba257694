"""The adaptation asset: hints mined from the query log, on a daily schedule."""

import dagster as dg

from hltm_assets.assets import WRITER_POOL
from hltm_resources.indexing.adaptation import propose
from hltm_resources.indexing.indexer import Indexer

QUERY_LOG = dg.AssetSpec(
    "query_log",
    description="Every question asked (table query_log in hltm.duckdb), written by the query "
    "module; not materialized by Dagster.",
    group_name="serving",
    kinds={"duckdb"},
)


@dg.asset(
    deps=[QUERY_LOG],
    group_name="adaptation",
    pool=WRITER_POOL,
    kinds={"duckdb"},
    description="Recurring query patterns and salient facet names with support, as a versioned "
    "proposal (approve with `hltm adapt --approve N`, or set adapt_auto_approve).",
)
def adaptation_hints(context: dg.AssetExecutionContext, hltm: dg.ResourceParam[Indexer]):
    settings = hltm.settings
    proposal, created = propose(settings, auto_approve=settings.adapt_auto_approve)
    if created and proposal.status == "proposed":
        context.log.info(f"hints v{proposal.version} proposed; review with hltm adapt --review")
    return dg.MaterializeResult(
        metadata={
            "version": proposal.version,
            "status": proposal.status,
            "new_proposal": created,
            "distinct_queries": proposal.queries,
            "patterns": len(proposal.patterns),
            "facet_names": len(proposal.facets),
            "proposal": dg.MetadataValue.json(proposal.as_dict()),
        }
    )


adaptation_job = dg.define_asset_job("adaptation_job", selection=[adaptation_hints])
daily_adaptation = dg.ScheduleDefinition(
    name="hltm_daily_adaptation",
    job=adaptation_job,
    cron_schedule="0 2 * * *",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Daily: mine the query log into a hints proposal.",
)
