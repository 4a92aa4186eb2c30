"""The report's HTML pages of Markdown and CSV tables (spsa_bench.analysis.html)."""

from spsa_bench.analysis.html import STYLE, TABLE_STYLE, csv_html, markdown_html


def test_csv_html_shows_every_row_and_column_escaped():
    text = 'arm,loss,note\nspsa,0.5,"a, b"\n<b>x</b>,1e-06,"say ""hi"""\n'
    page = csv_html(text, "T & U", intro="From x.csv")
    assert page.startswith("<!DOCTYPE html>") and page.count("<table>") == 1
    assert "<title>T &amp; U</title>" in page and "<h1>T &amp; U</h1>" in page
    assert "<p>From x.csv</p>" in page
    assert "<tr><th>arm</th><th>loss</th><th>note</th></tr>" in page
    # a quoted comma stays in its cell; markup is text; quotes are unescaped by the reader
    assert "<tr><td>spsa</td><td>0.5</td><td>a, b</td></tr>" in page
    assert "<td>&lt;b&gt;x&lt;/b&gt;</td><td>1e-06</td><td>say &quot;hi&quot;</td>" in page
    assert page.count("<tr>") == 3
    assert TABLE_STYLE in page


def test_csv_html_of_an_empty_file_is_a_page_without_a_table():
    page = csv_html("", "Empty")
    assert "<h1>Empty</h1>" in page and "<table>" not in page


def test_markdown_html_takes_the_table_style_and_keeps_its_default():
    text = "# Ranks\n\n**NOT RANKED**: short.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    default, wide = markdown_html(text, "R"), markdown_html(text, "R", style=TABLE_STYLE)
    assert f"<style>{STYLE}</style>" in default and "max-width:none" not in default
    assert f"<style>{TABLE_STYLE}</style>" in wide
    assert default.replace(STYLE, "") == wide.replace(TABLE_STYLE, "")
    assert "<p><strong>NOT RANKED</strong>: short.</p>" in wide
    assert "<tr><td>1</td><td>2</td></tr>" in wide
