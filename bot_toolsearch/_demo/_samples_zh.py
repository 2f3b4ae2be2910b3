"""Sample-data tool specs of the chat-group namespace ``group.*``, described in Chinese."""

# Chinese text uses full-width punctuation on purpose.
# ruff: noqa: RUF001

from __future__ import annotations

from ._schema_helpers import SampleSpec, boolean, integer, string

__all__ = ["SAMPLES_ZH"]

_GROUP = string("群号，例如 123456789")
_MEMBER = string("群成员的昵称或QQ号")

SAMPLES_ZH: tuple[SampleSpec, ...] = (
    (
        "group.get_member_avatar",
        "获取群成员的头像和昵称",
        {"group_id": _GROUP, "member": _MEMBER},
        ("member",),
        {"nickname": "小明", "avatar_url": "https://example.invalid/avatar/10001.png"},
    ),
    (
        "group.list_members",
        "列出群里的所有成员及其群名片",
        {"group_id": _GROUP, "limit": integer("最多返回多少人", 1)},
        (),
        {"members": [{"qq": "10001", "card": "小明"}]},
    ),
    (
        "group.get_member_info",
        "查询群成员的资料：入群时间、头衔、等级、最后发言时间",
        {"group_id": _GROUP, "member": _MEMBER},
        ("member",),
        {"join_time": "2023-04-01", "title": "活跃分子", "level": 12},
    ),
    (
        "group.mute_member",
        "禁言群成员一段时间",
        {"group_id": _GROUP, "member": _MEMBER, "minutes": integer("禁言分钟数", 1)},
        ("member", "minutes"),
        {"status": "已禁言"},
    ),
    (
        "group.unmute_member",
        "解除群成员的禁言",
        {"group_id": _GROUP, "member": _MEMBER},
        ("member",),
        {"status": "已解除禁言"},
    ),
    (
        "group.kick_member",
        "把成员移出群聊",
        {"group_id": _GROUP, "member": _MEMBER, "block": boolean("是否拒绝其再次加群")},
        ("member",),
        {"status": "已移出"},
    ),
    (
        "group.set_admin",
        "设置或取消群管理员",
        {"group_id": _GROUP, "member": _MEMBER, "enable": boolean("true 设为管理员，false 取消")},
        ("member",),
        {"status": "已设置"},
    ),
    (
        "group.set_member_card",
        "修改群成员的群名片（群昵称）",
        {"group_id": _GROUP, "member": _MEMBER, "card": string("新的群名片")},
        ("member", "card"),
        {"status": "已修改"},
    ),
    (
        "group.get_info",
        "获取群资料：群名称、群主、人数、简介",
        {"group_id": _GROUP},
        (),
        {"name": "示例交流群", "owner": "10000", "member_count": 318},
    ),
    (
        "group.rename",
        "修改群聊的名称",
        {"group_id": _GROUP, "name": string("新的群名称")},
        ("name",),
        {"status": "已改名"},
    ),
    (
        "group.post_announcement",
        "在群里发布一条群公告",
        {"group_id": _GROUP, "content": string("公告内容"), "pinned": boolean("是否置顶")},
        ("content",),
        {"announcement_id": "a_88"},
    ),
    (
        "group.list_announcements",
        "查看群里的历史公告",
        {"group_id": _GROUP},
        (),
        {"announcements": [{"id": "a_87", "content": "周五晚八点群活动"}]},
    ),
    (
        "group.message_history",
        "获取群聊天记录",
        {"group_id": _GROUP, "count": integer("消息条数", 1)},
        (),
        {"messages": [{"from": "小明", "text": "大家好"}]},
    ),
    (
        "group.recall_message",
        "撤回一条群消息",
        {"message_id": string("消息ID")},
        ("message_id",),
        {"status": "已撤回"},
    ),
    (
        "group.activity_ranking",
        "群成员发言活跃度排行榜",
        {"group_id": _GROUP, "days": integer("统计最近几天", 1)},
        (),
        {"ranking": [{"member": "小明", "messages": 532}]},
    ),
    (
        "group.upload_file",
        "上传文件到群文件",
        {"group_id": _GROUP, "path": string("本地文件路径")},
        ("path",),
        {"file_id": "gf_12"},
    ),
    (
        "group.list_files",
        "列出群文件及其大小",
        {"group_id": _GROUP},
        (),
        {"files": [{"name": "活动照片.zip", "size": "12 MB"}]},
    ),
    (
        "group.create_poll",
        "在群里发起投票",
        {
            "group_id": _GROUP,
            "question": string("投票问题"),
            "options": {"type": "array", "items": {"type": "string"}, "description": "选项"},
        },
        ("question", "options"),
        {"poll_id": "p_5"},
    ),
    ("group.sign_in", "群打卡签到，返回连续签到天数", {"group_id": _GROUP}, (), {"streak_days": 7}),
    (
        "group.honors",
        "查看群荣誉：龙王、群聊之火、快乐源泉",
        {"group_id": _GROUP},
        (),
        {"talkative": "小明", "emotion": "小红"},
    ),
)
