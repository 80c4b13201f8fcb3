# The participant pages' interface messages (issue #20; docs/languages.md). One file per
# language, the same message ids in each; a message missing in a language falls back to
# English. Study texts (consent, debrief, items, situations) are the study's data, not here.

# This language's own name, as the language switcher on the consent page shows it.
language-name = English
language-switcher = Language

## Every page
step-of = Step { $step } of { $steps }
withdraw-link = Withdraw from the study
continue = Continue
choose = Choose…

## Consent
consent-heading = Information and consent
pilot-notice-strong = Pilot run.
pilot-notice = You came through the study's pilot link: this run is marked as a pilot and counts nowhere (not in places, totals, exports or the report).
consent-agree = I agree to take part
consent-decline = I do not agree

## Demographics
demographics-heading = About you
demographics-errors = Please answer every question.
field-gender = Gender
field-year_of_birth = Year of birth
field-country = Country of residence
field-employment_status = Employment status
field-education = Highest completed education
option-prefer-not-to-say = Prefer not to say
option-female = Female
option-male = Male
option-non-binary-or-another-gender = Non-binary or another gender
option-employed = Employed
option-self-employed = Self-employed
option-unemployed = Unemployed
option-student = Student
option-retired = Retired
option-other = Other
option-none = None
option-primary-school = Primary school
option-lower-secondary-school = Lower secondary school
option-upper-secondary-school = Upper secondary school
option-vocational-training = Vocational training
option-university-bachelors = University - Bachelors
option-university-masters = University - Masters
option-university-doctorate = University - Doctorate

## Questionnaires
panas-before-heading = How do you feel right now?
panas-after-heading = How do you feel, imagining yourself in that situation?
reminder-label = The situation:
reminder-whole = Read the whole situation again
errors-heading = { $count ->
    [one] Please answer every item before you continue: one is still open
   *[other] Please answer every item before you continue: { $count } are still open
}
error-prefix = Error:
error-choose = Please choose an answer.
choose-one-statement = Choose one statement

## Situation
situation-heading = Imagine this situation
situation-intro = Please read the situation below carefully. Then imagine, as vividly as you can, that you are the person in it and that it is happening to you now. Take your time.
situation-continue = I have imagined it – continue
situation-wait = { $seconds ->
    [one] The button becomes available in one second.
   *[other] The button becomes available in { $seconds } seconds.
}
free-text-hint-optional = Optional. At most { $max } characters.
free-text-hint-required = Required. At most { $max } characters.
free-text-missing = Please write an answer before you continue.
free-text-too-long = Your answer is { $chars } characters long; please shorten it to at most { $max } characters. Your text is kept below.

## Attention check
check-heading = One more question
check-question = People notice different things in everyday life. To show that you are reading this question carefully, please choose "A little" below, whatever your answer would otherwise be.
check-option-not-at-all = Not at all
check-option-a-little = A little
check-option-moderately = Moderately
check-option-quite-a-bit = Quite a bit
check-option-extremely = Extremely

## Debrief and the final pages
debrief-heading = About this study
finish = Finish
final-withdrawn-heading = You have withdrawn
final-withdrawn-message = Your answers have been deleted. Thank you for your time. If you came from Prolific, please return your submission there (choose "Stop without completing").
final-completed-heading = Thank you!
final-completed-message = You have completed the study.
final-no-consent-heading = You chose not to take part
final-no-consent-message = No answers were stored. Thank you for considering the study. If you came from Prolific, please return your submission.
final-failed-check-heading = The study has ended
final-failed-check-message = Thank you for your time. The study ended after the attention question.
final-full-heading = The study is full
final-full-message = Thank you for your interest. Every place in this study has been taken. If you came from Prolific, please return your submission.
completion-code = Your completion code:
return-to-prolific = Return to Prolific
close-page = You can close this page now.

## Withdrawal
withdraw-heading = Withdraw from the study?
withdraw-text = If you withdraw, every answer you have given in this study is deleted and you cannot continue later. You do not need to give a reason.
withdraw-confirm = Withdraw and delete my answers
withdraw-back = Go back to the study

## A study that takes no newcomers
not-open-heading = This study is not open
not-open-message = Thank you for your interest. This study is not accepting participants at the moment.
study-full-heading = This study is full
study-full-message = Thank you for your interest. Every place in this study has been taken.
too-many-heading = Please try again in a few minutes
too-many-message = Many people have started this study from your network in the last few minutes. Please wait a few minutes and open your link again.
return-advice = If you came from Prolific, please return your submission there (choose "Stop without completing") so that your place goes to someone else.
