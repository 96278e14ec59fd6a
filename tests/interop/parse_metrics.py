"""Parse OpenMetrics text on stdin with the Prometheus project's own parser
(the `prometheus-client` package) and print its samples as JSON lines:
{"name": ..., "labels": {...}, "value": ...}. Exits non-zero (the parser's
error on stderr) if the text is not valid OpenMetrics.

Run by the e2e test `mcp_2026::metrics_*`.
"""

import json
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families


def main():
    text = sys.stdin.read()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            print(json.dumps({
                "family": family.name,
                "type": family.type,
                "name": sample.name,
                "labels": sample.labels,
                "value": sample.value,
            }))


if __name__ == "__main__":
    main()
