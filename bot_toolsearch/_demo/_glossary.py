"""What the offline model adds to a Chinese message's search: English topic words.

A real model asked in Chinese about tools described in English searches in English
(``北京现在几点`` becomes ``time now``). The offline planner has no language model, so it looks
the message's common topic words up in this small glossary. It is the stand-in model's
vocabulary, not the search engine's: `ToolCatalog` gets no synonyms, and a Chinese query
still finds Chinese descriptions through character bigrams.
"""

from __future__ import annotations

__all__ = ["english_glosses"]

# Every entry found in the message adds its words (歌词 adds "lyrics" and, through 歌, "song");
# the order only decides the order of the words.
_GLOSSARY: tuple[tuple[str, str], ...] = (
    ("空气质量", "air quality"),
    ("紫外线", "uv index"),
    ("日出", "sunrise"),
    ("日落", "sunset"),
    ("天气", "weather"),
    ("气温", "temperature"),
    ("温度", "temperature"),
    ("下雨", "rain precipitation"),
    ("降雨", "precipitation"),
    ("预报", "forecast"),
    ("明天", "forecast"),
    ("后天", "forecast"),
    ("几点", "time now"),
    ("时间", "time"),
    ("时区", "timezone"),
    ("星期几", "day week"),
    ("周几", "day week"),
    ("闰年", "leap year"),
    ("多少天", "days between"),
    ("汇率", "exchange rate"),
    ("美元", "exchange rate"),
    ("人民币", "exchange rate"),
    ("欧元", "exchange rate"),
    ("日元", "exchange rate"),
    ("兑换", "exchange rate"),
    ("股价", "stock quote"),
    ("股票", "stock quote"),
    ("比特币", "crypto price"),
    ("贷款", "loan payment"),
    ("利息", "compound interest"),
    ("小费", "tip"),
    ("公里", "convert length"),
    ("英里", "convert length"),
    ("厘米", "convert length"),
    ("千克", "convert mass"),
    ("公斤", "convert mass"),
    ("磅", "convert mass"),
    ("摄氏", "convert temperature"),
    ("华氏", "convert temperature"),
    ("换算", "convert"),
    ("次方", "evaluate expression"),
    ("平方根", "evaluate expression"),
    ("平均", "average"),
    ("中位数", "median"),
    ("百分比", "percentage"),
    ("质数", "prime"),
    ("素数", "prime"),
    ("阶乘", "factorial"),
    ("距离", "distance"),
    ("多远", "distance"),
    ("路线", "directions"),
    ("怎么走", "directions"),
    ("附近", "search nearby"),
    ("堵车", "traffic"),
    ("邮件", "email"),
    ("日程", "calendar event"),
    ("会议", "calendar event"),
    ("提醒", "reminder"),
    ("节假日", "public holidays"),
    ("歌词", "lyrics"),
    ("播放", "play song"),
    ("音乐", "music"),
    ("歌", "song"),
    ("新闻", "news"),
    ("头条", "top headlines"),
    ("航班", "flight"),
    ("机票", "flights"),
    ("酒店", "hotels"),
    ("签证", "visa requirements"),
    ("待办", "todo"),
    ("开灯", "lights"),
    ("关灯", "lights"),
    ("空调", "thermostat"),
    ("门锁", "lock door"),
    ("联系人", "contacts"),
    ("生日", "birthdays"),
    ("文件", "files"),
    ("字数", "word count"),
    ("翻转", "reverse"),
)


def english_glosses(text: str) -> list[str]:
    """English topic words for the glossary entries found in ``text``, in glossary order."""
    words: list[str] = []
    for chinese, english in _GLOSSARY:
        if chinese in text:
            words.extend(english.split())
    return list(dict.fromkeys(words))
