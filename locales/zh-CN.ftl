# 简体中文. Our own translation of the interface (not a validated instrument translation).
language-name = 简体中文
language-switcher = 语言

## Every page
step-of = 第 { $step } 步，共 { $steps } 步
withdraw-link = 退出本研究
continue = 继续
choose = 请选择…

## Consent
consent-heading = 研究说明与知情同意
pilot-notice-strong = 试运行。
pilot-notice = 您是通过本研究的试运行链接进入的：本次作答被标记为试运行，不计入任何地方（名额、总数、导出数据或报告）。
consent-agree = 我同意参加
consent-decline = 我不同意

## Demographics
demographics-heading = 关于您
demographics-errors = 请回答每一个问题。
field-gender = 性别
field-year_of_birth = 出生年份
field-country = 居住国家
field-employment_status = 就业状况
field-education = 最高完成学历
option-prefer-not-to-say = 不愿透露
option-female = 女
option-male = 男
option-non-binary-or-another-gender = 非二元或其他性别
option-employed = 受雇
option-self-employed = 自雇
option-unemployed = 失业
option-student = 学生
option-retired = 退休
option-other = 其他
option-none = 无
option-primary-school = 小学
option-lower-secondary-school = 初中
option-upper-secondary-school = 高中
option-vocational-training = 职业培训
option-university-bachelors = 大学本科
option-university-masters = 硕士
option-university-doctorate = 博士

## Questionnaires
panas-before-heading = 您此刻感觉如何？
panas-after-heading = 想象自己身处那个情境中，您感觉如何？
reminder-label = 情境：
reminder-whole = 再读一遍完整的情境
# Chinese has one plural form (CLDR): only [other] is ever chosen.
errors-heading = { $count ->
   *[other] 继续之前，请回答尚未作答的 { $count } 个条目
}
error-prefix = 错误：
error-choose = 请选择一个答案。
choose-one-statement = 请选择一项陈述

## Situation
situation-heading = 想象这个情境
situation-intro = 请仔细阅读下面的情境。然后尽可能生动地想象：您就是其中的那个人，这件事正发生在您身上。请慢慢来。
situation-continue = 我已经想象好了 – 继续
situation-wait = { $seconds ->
   *[other] 按钮将在 { $seconds } 秒后可用。
}
free-text-hint-optional = 选填。最多 { $max } 个字符。
free-text-hint-required = 必填。最多 { $max } 个字符。
free-text-missing = 请先填写回答再继续。
free-text-too-long = 您的回答有 { $chars } 个字符；请缩短到最多 { $max } 个字符。您的文字保留在下方。

## Attention check
check-heading = 还有一个问题
check-question = 人们在日常生活中会注意到不同的事情。为了表明您在认真阅读这个问题，请在下面选择“有一点”，无论您原本会如何回答。
check-option-not-at-all = 完全没有
check-option-a-little = 有一点
check-option-moderately = 中等
check-option-quite-a-bit = 相当多
check-option-extremely = 极其

## Debrief and the final pages
debrief-heading = 关于本研究
finish = 完成
final-withdrawn-heading = 您已退出
final-withdrawn-message = 您的回答已被删除。感谢您付出的时间。如果您来自 Prolific，请在那里退回您的提交（选择 “Stop without completing”）。
final-completed-heading = 谢谢！
final-completed-message = 您已完成本研究。
final-no-consent-heading = 您选择了不参加
final-no-consent-message = 没有保存任何回答。感谢您考虑参加本研究。如果您来自 Prolific，请退回您的提交。
final-failed-check-heading = 研究已结束
final-failed-check-message = 感谢您付出的时间。本研究在注意力问题之后结束。
final-full-heading = 本研究名额已满
final-full-message = 感谢您的关注。本研究的所有名额都已被占用。如果您来自 Prolific，请退回您的提交。
completion-code = 您的完成代码：
return-to-prolific = 返回 Prolific
close-page = 您现在可以关闭此页面。

## Withdrawal
withdraw-heading = 要退出本研究吗？
withdraw-text = 如果您退出，您在本研究中给出的所有回答都将被删除，并且以后无法继续。您不需要给出理由。
withdraw-confirm = 退出并删除我的回答
withdraw-back = 返回研究

## A study that takes no newcomers
not-open-heading = 本研究未开放
not-open-message = 感谢您的关注。本研究目前不接受参与者。
study-full-heading = 本研究名额已满
study-full-message = 感谢您的关注。本研究的所有名额都已被占用。
too-many-heading = 请几分钟后再试
too-many-message = 在过去几分钟内，有许多人从您的网络开始了本研究。请等待几分钟，然后再次打开您的链接。
return-advice = 如果您来自 Prolific，请在那里退回您的提交（选择 “Stop without completing”），以便您的名额留给其他人。
