"""Real documents for the text codecs, written out at test time: English prose in paragraphs, text with
emoji, combining accents, Arabic and Hebrew, CRLF line ends with a BOM, and an HTML page with scripts,
styles, pre blocks, entities and nested inline markup."""

from __future__ import annotations

ENGLISH = [
    "Provenance is the record of where a thing came from and what happened to it on the way. For a "
    "painting it is a chain of sales and exhibitions; for a photograph published today it may be a "
    "camera's signature, an editor's crop and a newsroom's caption, each step leaving a trace that a "
    "reader can check long after the picture has travelled far from the place it was first shown.",
    "Machine-written text has no camera and no negative. What it can carry is a statement from the "
    "service that produced it, bound to the exact words, and a mark hidden in the words themselves so "
    "that a quoted passage still points back to that statement when the surrounding document is gone, "
    "as long as the characters that hold the mark are copied along with the visible ones.",
    "None of this makes a text true. It tells a reader which generator produced the words and when, "
    "and whether the words have changed since; the judgement about what they say stays with the "
    "reader, who now has one more fact to weigh, and with the editor who chose to publish them.",
    "Short lines stay unmarked.",
    "The last paragraph is here to make the document long enough that a reader would call it an "
    "article rather than a note, with enough words in it to carry a mark of its own and to show that "
    "every paragraph of a reasonable length carries the whole identifier, not a share of it.",
]


def english(line_end: str = "\n") -> str:
    return (line_end * 2).join(ENGLISH) + line_end


MIXED = "\n\n".join([
    "Emoji travel well: the team 👩‍👩‍👧‍👦 celebrated with 🎉 and a flag 🇫🇷 after the launch, "
    "and the keycap 1️⃣ marked the first place in the ranking that everyone had been watching all week "
    "while the thumbs 👍🏽 kept coming from every corner of the office and the chat never went quiet.",
    "Combining accents must stay on their letters: cafe\u0301, nai\u0308ve, Ange\u0301lique, "
    "re\u0301sume\u0301 and Zo\u00eb all appear in this sentence, which goes on for a while longer so that "
    "it is counted among the paragraphs long enough to carry the whole mark on its own, like the others.",
    "النص العربي يتصل حروفه ببعضها ويجب ألا تنقطع الكلمات بسبب العلامة المخفية التي نضيفها إلى النص "
    "ولذلك نضع العلامة بين الكلمات فقط بعد المسافة وقبل حرف جديد في بداية كلمة كاملة دون أن نغير شكل "
    "الحروف أو ترتيبها في السطر عند العرض على الشاشة أو عند الطباعة على الورق أو النسخ إلى برنامج آخر",
    "עברית נכתבת מימין לשמאל והסימן המוסתר אינו אמור לשבור את כיוון הטקסט או לפצל רצף של מילים "
    "בעברית ולכן הוא מוצב רק בתחילת מילה אחרי רווח כך שהקורא לא יראה שום הבדל בטקסט המוצג על המסך "
    "גם כאשר הפסקה ארוכה מאוד וממשיכה עוד ועוד כדי שתהיה ארוכה מספיק לשאת את הסימן כולו",
]) + "\n"

HTML_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Provenance &amp; the press</title>
  <style>p > b { color: #333; } .x::after { content: "a b c d e f g"; }</style>
  <script>var words = "one two three four five six seven eight nine ten"; if (1 < 2) { go(); }</script>
</head>
<body class="article" data-note='a > b "quoted"'>
  <h1>Provenance &amp; the press</h1>
  <p>Provenance is the record of where a thing came from and what happened to it on the way. For a
  painting it is a chain of <a href="/sales?x=1&amp;y=2">sales and exhibitions</a>; for a photograph
  published today it may be a camera&rsquo;s signature, an editor&#8217;s crop and a newsroom&#x2019;s
  caption, each step leaving a <em>trace that a <b>reader</b> can check</em> long after the picture has
  travelled far from the place it was first shown.</p>
  <pre>  preformatted text keeps   its spaces and must never be touched by the mark at all, not one
  character of it, however many words it holds: one two three four five six seven eight nine ten
  eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty twenty-one</pre>
  <!-- a comment with many words that must stay exactly as it is, one two three four five six seven
  eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty -->
  <ul><li>Machine-written text has no camera and no negative. What it can carry is a statement from
  the service that produced it, bound to the exact words, and a mark hidden in the words themselves so
  that a quoted passage still points back to that statement when the surrounding document is gone.</li>
  <li>Short item.</li></ul>
  <textarea name="t">a textarea holds raw text that must not be marked one two three four five six seven
  eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty
  twenty-one twenty-two twenty-three twenty-four twenty-five twenty-six twenty-seven twenty-eight</textarea>
  <script type="module">import("./app.js").then((m) => m.start("one two three four five"));</script>
</body>
</html>
"""
