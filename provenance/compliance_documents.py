"""The compliance report's figures as plain values, and their CSV and PDF documents.

Pure module (no Django): provenance/compliance.py fills a ComplianceReport from the database; the API and
the dashboard render it here, so both download the same bytes.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from provenance.disclosures import DISCLOSURE_NAMES
from record_format.times import iso_timestamp

if TYPE_CHECKING:
    from fpdf import FPDF

FORMATS = ("json", "csv", "pdf")
CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "pdf": "application/pdf"}
# Client-managed records that named no format: the row's label in the documents (JSON says null).
UNSPECIFIED = "unspecified"
CSV_COLUMNS = ("format", "signatures", *DISCLOSURE_NAMES, "not_recorded")
DISCLOSURE_WORDS = {
    "mark": "an invisible watermark",
    "metadata": "its token and disclosure metadata in the file's metadata",
    "c2pa": "an embedded C2PA manifest",
    "visible": "a visible AI label",
}


@dataclass(frozen=True)
class FormatFigures:
    format: str | None  # a content family; None: client-managed records that named none
    signatures: int
    disclosures: dict[str, int]  # DISCLOSURE_NAMES -> signatures whose file carried it
    not_recorded: int  # signatures whose disclosures were not recorded

    @property
    def label(self) -> str:
        return self.format or UNSPECIFIED


@dataclass(frozen=True)
class ComplianceReport:
    organization_id: str
    organization_name: str
    since: datetime  # inclusive
    until: datetime  # exclusive
    generated_at: datetime
    formats: tuple[FormatFigures, ...]
    verifications: int  # verifications that found one of the organization's records
    detection_tool_url: str

    @property
    def total(self) -> FormatFigures:
        """Every format's figures added up (format None: the label is replaced by "all" where shown)."""
        return FormatFigures(
            format=None, signatures=sum(row.signatures for row in self.formats),
            disclosures={name: sum(row.disclosures[name] for row in self.formats) for name in DISCLOSURE_NAMES},
            not_recorded=sum(row.not_recorded for row in self.formats))


def report_filename(report: ComplianceReport, format: str) -> str:
    """compliance-report-<from>-<to>.<format>, the period's ends as UTC dates and times."""
    return (f"compliance-report-{report.since.astimezone(UTC):%Y%m%dT%H%M%SZ}-"
            f"{report.until.astimezone(UTC):%Y%m%dT%H%M%SZ}.{format}")


def _figures_row(label: str, figures: FormatFigures) -> list:
    return [label, figures.signatures, *(figures.disclosures[name] for name in DISCLOSURE_NAMES),
            figures.not_recorded]


def report_csv(report: ComplianceReport) -> bytes:
    """A header row, one row per format with its counts, an `all` row, then `verifications,<total>`.

    Every cell is a fixed label or a number, so no cell can start a spreadsheet formula."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    for row in report.formats:
        writer.writerow(_figures_row(row.label, row))
    writer.writerow(_figures_row("all", report.total))
    writer.writerow(["verifications", report.verifications])
    return buffer.getvalue().encode()


def _latin1(text: str) -> str:
    # The PDF's built-in Helvetica covers Latin-1 only; a name outside it shows "?" where a letter is missing
    # rather than failing the download.
    return text.encode("latin-1", "replace").decode("latin-1")


def report_pdf(report: ComplianceReport) -> bytes:
    """One A4 page: title, organization, period, the per-format table, verifications, the detection tool."""
    from fpdf import FPDF  # 60 MB resident: loaded by the worker that renders a PDF, not by every worker

    pdf = FPDF(format="A4")
    pdf.set_title("AI content disclosure report")
    pdf.set_creation_date(report.generated_at)
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 16)
    _line(pdf, "AI content disclosure report", height=10)
    pdf.set_font("Helvetica", size=10)
    for label, value in (("Organization", report.organization_name),
                         ("Period", f"{iso_timestamp(report.since)} (included) to "
                                    f"{iso_timestamp(report.until)} (excluded)"),
                         ("Generated", iso_timestamp(report.generated_at))):
        _line(pdf, f"{label}: {value}")
    pdf.ln(4)
    _figures_table(pdf, report)
    pdf.ln(4)
    _line(pdf, f"Verifications of this organization's content in the period: {report.verifications}")
    _line(pdf, f"Anyone can check a file with the public detection tool: {report.detection_tool_url}")
    pdf.ln(2)
    pdf.set_font("Helvetica", size=8)
    for name in DISCLOSURE_NAMES:
        _line(pdf, f"{name}: signatures whose signed file carried {DISCLOSURE_WORDS[name]}.", height=4)
    _line(pdf, "not_recorded: signatures whose disclosures were not recorded. unspecified: records a client "
               "signed itself without naming a format (the service wrote no file for them).", height=4)
    return bytes(pdf.output())


def _line(pdf: FPDF, text: str, height: float = 6) -> None:
    from fpdf.enums import XPos, YPos

    pdf.multi_cell(0, height, _latin1(text), new_x=XPos.LMARGIN, new_y=YPos.NEXT)


def _figures_table(pdf: FPDF, report: ComplianceReport) -> None:
    pdf.set_font("Helvetica", size=9)
    with pdf.table(text_align=("LEFT", *("RIGHT",) * (len(CSV_COLUMNS) - 1))) as table:
        header = table.row()
        for column in CSV_COLUMNS:
            header.cell(column)
        for label, figures in [*((row.label, row) for row in report.formats), ("all", report.total)]:
            row = table.row()
            for value in _figures_row(label, figures):
                row.cell(str(value))
