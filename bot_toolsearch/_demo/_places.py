"""Known cities for the demo: names (English and Chinese), IANA time zone, coordinates."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["CITIES", "City", "find_city"]


@dataclass(frozen=True, slots=True)
class City:
    """One known city."""

    name: str
    """English name."""
    timezone: str
    """IANA time zone."""
    latitude: float
    """Degrees north."""
    longitude: float
    """Degrees east."""


_TABLE: tuple[tuple[str, str, float, float, tuple[str, ...]], ...] = (
    ("Beijing", "Asia/Shanghai", 39.9042, 116.4074, ("北京", "peking")),
    ("Shanghai", "Asia/Shanghai", 31.2304, 121.4737, ("上海",)),
    ("Shenzhen", "Asia/Shanghai", 22.5431, 114.0579, ("深圳",)),
    ("Guangzhou", "Asia/Shanghai", 23.1291, 113.2644, ("广州",)),
    ("Hangzhou", "Asia/Shanghai", 30.2741, 120.1551, ("杭州",)),
    ("Chengdu", "Asia/Shanghai", 30.5728, 104.0668, ("成都",)),
    ("Hong Kong", "Asia/Hong_Kong", 22.3193, 114.1694, ("香港",)),
    ("Taipei", "Asia/Taipei", 25.0330, 121.5654, ("台北",)),
    ("Tokyo", "Asia/Tokyo", 35.6762, 139.6503, ("东京",)),
    ("Osaka", "Asia/Tokyo", 34.6937, 135.5023, ("大阪",)),
    ("Seoul", "Asia/Seoul", 37.5665, 126.9780, ("首尔",)),
    ("Singapore", "Asia/Singapore", 1.3521, 103.8198, ("新加坡",)),
    ("Bangkok", "Asia/Bangkok", 13.7563, 100.5018, ("曼谷",)),
    ("Delhi", "Asia/Kolkata", 28.7041, 77.1025, ("new delhi", "德里")),
    ("Mumbai", "Asia/Kolkata", 19.0760, 72.8777, ("孟买",)),
    ("Dubai", "Asia/Dubai", 25.2048, 55.2708, ("迪拜",)),
    ("Moscow", "Europe/Moscow", 55.7558, 37.6173, ("莫斯科",)),
    ("Istanbul", "Europe/Istanbul", 41.0082, 28.9784, ("伊斯坦布尔",)),
    ("Berlin", "Europe/Berlin", 52.5200, 13.4050, ("柏林",)),
    ("Paris", "Europe/Paris", 48.8566, 2.3522, ("巴黎",)),
    ("London", "Europe/London", 51.5074, -0.1278, ("伦敦",)),
    ("Madrid", "Europe/Madrid", 40.4168, -3.7038, ("马德里",)),
    ("Rome", "Europe/Rome", 41.9028, 12.4964, ("罗马",)),
    ("Amsterdam", "Europe/Amsterdam", 52.3676, 4.9041, ("阿姆斯特丹",)),
    ("Zurich", "Europe/Zurich", 47.3769, 8.5417, ("苏黎世",)),
    ("Oslo", "Europe/Oslo", 59.9139, 10.7522, ("奥斯陆",)),
    ("Stockholm", "Europe/Stockholm", 59.3293, 18.0686, ("斯德哥尔摩",)),
    ("Copenhagen", "Europe/Copenhagen", 55.6761, 12.5683, ("哥本哈根",)),
    ("Helsinki", "Europe/Helsinki", 60.1699, 24.9384, ("赫尔辛基",)),
    ("Vienna", "Europe/Vienna", 48.2082, 16.3738, ("维也纳",)),
    ("Lisbon", "Europe/Lisbon", 38.7223, -9.1393, ("里斯本",)),
    ("Dublin", "Europe/Dublin", 53.3498, -6.2603, ("都柏林",)),
    ("Cairo", "Africa/Cairo", 30.0444, 31.2357, ("开罗",)),
    ("Nairobi", "Africa/Nairobi", -1.2921, 36.8219, ("内罗毕",)),
    ("New York", "America/New_York", 40.7128, -74.0060, ("nyc", "纽约")),
    ("Boston", "America/New_York", 42.3601, -71.0589, ("波士顿",)),
    ("Chicago", "America/Chicago", 41.8781, -87.6298, ("芝加哥",)),
    ("Denver", "America/Denver", 39.7392, -104.9903, ("丹佛",)),
    ("Los Angeles", "America/Los_Angeles", 34.0522, -118.2437, ("la", "洛杉矶")),
    ("San Francisco", "America/Los_Angeles", 37.7749, -122.4194, ("sf", "旧金山")),
    ("Seattle", "America/Los_Angeles", 47.6062, -122.3321, ("西雅图",)),
    ("Toronto", "America/Toronto", 43.6532, -79.3832, ("多伦多",)),
    ("Mexico City", "America/Mexico_City", 19.4326, -99.1332, ("墨西哥城",)),
    ("Sao Paulo", "America/Sao_Paulo", -23.5505, -46.6333, ("são paulo", "圣保罗")),
    ("Sydney", "Australia/Sydney", -33.8688, 151.2093, ("悉尼",)),
    ("Melbourne", "Australia/Melbourne", -37.8136, 144.9631, ("墨尔本",)),
    ("Auckland", "Pacific/Auckland", -36.8485, 174.7633, ("奥克兰",)),
)

CITIES: Mapping[str, City] = {
    alias.casefold(): City(name, zone, lat, lon)
    for name, zone, lat, lon, aliases in _TABLE
    for alias in (name, *aliases)
}
"""Every spelling (case-folded) → city."""


def find_city(name: str) -> City | None:
    """The city called ``name`` (any known spelling, case-insensitive), or ``None``."""
    return CITIES.get(name.strip().casefold())
