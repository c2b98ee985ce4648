"""Everything that renders: the Markdown/PDF report (`build_markdown`, `markdown_to_pdf`, `chart_images`), its
charts (Plotly figures, PNG for the PDF), the plan as rows, text and Markdown, its predicted serving performance
(`serving_rows`, `serving_text`, `serving_markdown`, `serving_chart`), the "can it run this?" support
table (`support_table`), the CLI's plain text, the escaping every user or model string passes through before it
reaches Markdown (`md_escape`, `fold`, `link_urls`), and a knowledge source as its title and link (`cite`; `cite_reason` adds the version and read date).

May import: advisor.evidence and every room below it, and the probes' result types.
"""
from advisor.report import support_table
from advisor.report.charts import (concurrency_chart, latency_chart, memory_chart, ranking_chart, roofline_chart,
                                   serving_chart, sweep_charts, throughput_chart, to_png)
from advisor.report.bundle import reproduce_bundle, reproduce_command
from advisor.report.document import (ReportError, build_markdown, chart_figures, chart_images, markdown_to_pdf,
                                     run_label, serving_label)
from advisor.report.mdtext import ZWSP, cite, cite_reason, fold, link_urls, md_escape, seed_lines
from advisor.report.plan import (device_label, file_shape_text, fits_word, header_lines, plan_markdown, plan_rows,
                                 plan_text, shape_parts)
from advisor.report.serving import memory_line, memory_markdown, serving_markdown, serving_rows, serving_text
from advisor.report.terminal import hardware_text, recommendation_text

__all__ = ["ReportError", "ZWSP", "build_markdown", "chart_figures", "chart_images", "cite", "cite_reason", "concurrency_chart",
           "device_label", "file_shape_text", "fits_word", "fold", "hardware_text", "header_lines", "latency_chart", "link_urls",
           "markdown_to_pdf", "md_escape", "memory_chart", "memory_line", "memory_markdown", "plan_markdown", "plan_rows", "plan_text", "ranking_chart",
           "recommendation_text", "shape_parts", "roofline_chart", "reproduce_bundle", "reproduce_command", "run_label", "seed_lines", "serving_chart", "serving_label", "serving_markdown",
           "serving_rows", "serving_text", "support_table", "sweep_charts", "throughput_chart",
           "to_png"]
