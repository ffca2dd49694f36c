"""Sentences with known spoken forms (and, for Japanese, known readings), written for onsei:
the bench (bench/text.py) measures on them and tests/services/text reads them too.

Each expression (what Whisper writes, how it is said) goes into every frame of its language;
``|`` separates spoken forms that are all right ("one hundred and eleven" or "one hundred
eleven"; "o" and "oh" for the zero of a time). Japanese readings are OpenJTalk's pronunciation
form (long vowels as ー, は as ワ).
"""

from __future__ import annotations

# (kind, written, spoken alternatives)
EN_EXPRESSIONS = [
    ("cardinal", "7", "seven"),
    ("cardinal", "42", "forty two"),
    ("cardinal", "311", "three hundred eleven|three hundred and eleven"),
    ("cardinal", "1,250", ("one thousand two hundred fifty|one thousand two hundred and fifty|"
                          "twelve hundred fifty|twelve hundred and fifty")),
    ("cardinal", "86,000", "eighty six thousand"),
    ("cardinal", "15", "fifteen"),
    ("ordinal", "1st", "first"),
    ("ordinal", "2nd", "second"),
    ("ordinal", "3rd", "third"),
    ("ordinal", "21st", "twenty first"),
    ("ordinal", "100th", "one hundredth|hundredth"),
    ("decimal", "3.14", "three point one four"),
    ("decimal", "0.5", "zero point five|point five"),
    ("decimal", "2.75", "two point seven five"),
    ("date", "January 5, 2021", ("january fifth twenty twenty one|the fifth of january twenty "
                                 "twenty one")),
    ("date", "May 1st", "may first"),
    ("date", "1999", "nineteen ninety nine"),
    ("date", "2024", "twenty twenty four|two thousand twenty four"),
    ("date", "July 4, 1776", ("july fourth seventeen seventy six|the fourth of july seventeen "
                             "seventy six")),
    ("time", "10:30", "ten thirty"),
    ("time", "7:05 pm", "seven oh five p m|seven oh five pm|seven o five pm"),
    ("time", "9 am", "nine a m|nine am"),
    ("time", "6:45", "six forty five"),
    ("money", "$25", "twenty five dollars"),
    ("money", "$3.50", "three dollars fifty cents|three dollars and fifty cents|three fifty"),
    ("money", "£10", "ten pounds"),
    ("money", "€200", "two hundred euros"),
    ("money", "$1,000", "one thousand dollars|a thousand dollars"),
    ("money", "$5 million", "five million dollars"),
    ("percent", "12%", "twelve percent"),
    ("percent", "3.5%", "three point five percent"),
    ("percent", "100%", "one hundred percent|a hundred percent"),
    ("unit", "5 kg", "five kilograms"),
    ("unit", "10 km", "ten kilometers|ten kilometres"),
    ("unit", "30 mph", "thirty miles per hour|thirty miles an hour"),
    ("unit", "25°C", "twenty five degrees celsius"),
    ("unit", "500 ml", "five hundred milliliters|five hundred millilitres"),
    ("abbreviation", "Dr. Smith", "doctor smith"),
    ("abbreviation", "Mr. Jones", "mister jones"),
    ("abbreviation", "Mrs. Brown", "missus brown|misses brown|missis brown"),
    ("abbreviation", "St. Louis", "saint louis"),
    ("abbreviation", "etc.", "et cetera|etcetera"),
]
EN_FRAMES = ["I think it was {} in the end.", "They told us {} yesterday.",
             "Honestly, {} is what she said."]

# (kind, written, spoken, reading of the expression)
JA_EXPRESSIONS = [
    ("cardinal", "8200円", "八千二百円", "ハッセンニヒャクエン"),
    ("cardinal", "300円", "三百円", "サンビャクエン"),
    ("cardinal", "600人", "六百人", "ロッピャクニン"),
    ("cardinal", "1,250人", "千二百五十人", "センニヒャクゴジューニン"),
    ("cardinal", "5個", "五個", "ゴコ"),
    ("cardinal", "3人", "三人", "サンニン"),
    ("cardinal", "3本", "三本", "サンボン"),
    ("cardinal", "6本", "六本", "ロッポン"),
    ("cardinal", "1000円", "千円", "センエン"),
    ("cardinal", "10万円", "十万円", "ジューマンエン"),
    ("ordinal", "第3回", "第三回", "ダイサンカイ"),
    ("ordinal", "1番目", "一番目", "イチバンメ"),
    ("ordinal", "2位", "二位", "ニイ"),
    ("decimal", "3.5キロ", "三点五キロ", "サンテンゴキロ"),
    ("decimal", "0.5秒", "零点五秒", "レーテンゴビョー"),
    ("date", "2024年", "二千二十四年", "ニセンニジューヨネン"),
    ("date", "3月5日", "三月五日", "サンガツイツカ"),
    ("date", "4月1日", "四月一日", "シガツツイタチ"),
    ("date", "1999年", "千九百九十九年", "センキューヒャクキュージューキューネン"),
    ("time", "10時30分", "十時三十分", "ジュージサンジュップン"),
    ("time", "午前9時", "午前九時", "ゴゼンクジ"),
    ("time", "7時", "七時", "シチジ"),
    ("time", "10:30", "十時三十分", "ジュージサンジュップン"),
    ("money", "$25", "二十五ドル", "ニジューゴドル"),
    ("percent", "12%", "十二パーセント", "ジューニパーセント"),
    ("percent", "50%", "五十パーセント", "ゴジュッパーセント"),
    ("unit", "5kg", "五キログラム", "ゴキログラム"),
    ("unit", "100m", "百メートル", "ヒャクメートル"),
    ("unit", "25℃", "二十五度", "ニジューゴド"),
    ("abbreviation", "AI", "エーアイ", "エーアイ"),
    ("abbreviation", "NHK", "エヌエイチケイ", "エヌエイチケー"),
]
# (frame, its reading around the expression)
JA_FRAMES = [("今日は{}でした。", "キョーワ{}デシタ"), ("全部で{}です。", "ゼンブデ{}デス"),
             ("たしか{}だったと思います。", "タシカ{}ダッタトオモイマス"),
             ("{}と聞きました。", "{}トキキマシタ")]


def english() -> list[tuple[str, str, list[str]]]:
    """(kind, written sentence, spoken sentences that are right)."""
    return [(kind, f.format(w), [f.format(a) for a in spoken.split("|")])
            for kind, w, spoken in EN_EXPRESSIONS for f in EN_FRAMES]


def japanese() -> list[tuple[str, str, str, str]]:
    """(kind, written sentence, spoken sentence, reading)."""
    return [(kind, f.format(w), f.format(s), r.format(reading))
            for kind, w, s, reading in JA_EXPRESSIONS for f, r in JA_FRAMES]
