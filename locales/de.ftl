# Deutsch. Our own translation of the interface (not a validated instrument translation).
language-name = Deutsch
language-switcher = Sprache

## Every page
step-of = Schritt { $step } von { $steps }
withdraw-link = Von der Studie zurücktreten
continue = Weiter
choose = Bitte wählen…

## Consent
consent-heading = Information und Einwilligung
pilot-notice-strong = Pilotdurchlauf.
pilot-notice = Sie sind über den Pilotlink der Studie gekommen: Dieser Durchlauf ist als Pilot markiert und zählt nirgends (nicht bei den Plätzen, den Summen, den Exporten oder im Bericht).
consent-agree = Ich willige ein, teilzunehmen
consent-decline = Ich willige nicht ein

## Demographics
demographics-heading = Über Sie
demographics-errors = Bitte beantworten Sie jede Frage.
field-gender = Geschlecht
field-year_of_birth = Geburtsjahr
field-country = Wohnsitzland
field-employment_status = Erwerbsstatus
field-education = Höchster abgeschlossener Bildungsabschluss
option-prefer-not-to-say = Keine Angabe
option-female = Weiblich
option-male = Männlich
option-non-binary-or-another-gender = Nichtbinär oder ein anderes Geschlecht
option-employed = Angestellt
option-self-employed = Selbstständig
option-unemployed = Arbeitslos
option-student = Studierend
option-retired = Im Ruhestand
option-other = Sonstiges
option-none = Keiner
option-primary-school = Grundschule
option-lower-secondary-school = Hauptschule oder Sekundarstufe I
option-upper-secondary-school = Abitur oder Sekundarstufe II
option-vocational-training = Berufsausbildung
option-university-bachelors = Hochschule – Bachelor
option-university-masters = Hochschule – Master
option-university-doctorate = Hochschule – Promotion

## Questionnaires
panas-before-heading = Wie fühlen Sie sich gerade?
panas-after-heading = Wie fühlen Sie sich, wenn Sie sich in diese Situation hineinversetzen?
reminder-label = Die Situation:
reminder-whole = Die ganze Situation noch einmal lesen
errors-heading = { $count ->
    [one] Bitte beantworten Sie die noch offene Aussage, bevor Sie weitermachen
   *[other] Bitte beantworten Sie die { $count } noch offenen Aussagen, bevor Sie weitermachen
}
error-prefix = Fehler:
error-choose = Bitte wählen Sie eine Antwort.
choose-one-statement = Wählen Sie eine Aussage

## Situation
situation-heading = Stellen Sie sich diese Situation vor
situation-intro = Bitte lesen Sie die folgende Situation aufmerksam. Stellen Sie sich dann so lebhaft wie möglich vor, dass Sie die Person darin sind und dass es Ihnen gerade jetzt passiert. Lassen Sie sich Zeit.
situation-continue = Ich habe es mir vorgestellt – weiter
situation-wait = { $seconds ->
    [one] Die Schaltfläche wird in einer Sekunde verfügbar.
   *[other] Die Schaltfläche wird in { $seconds } Sekunden verfügbar.
}
free-text-hint-optional = Freiwillig. Höchstens { $max } Zeichen.
free-text-hint-required = Erforderlich. Höchstens { $max } Zeichen.
free-text-missing = Bitte schreiben Sie eine Antwort, bevor Sie fortfahren.
free-text-too-long = Ihre Antwort ist { $chars } Zeichen lang; bitte kürzen Sie sie auf höchstens { $max } Zeichen. Ihr Text steht unten.

## Attention check
check-heading = Noch eine Frage
check-question = Menschen bemerken im Alltag unterschiedliche Dinge. Um zu zeigen, dass Sie diese Frage aufmerksam lesen, wählen Sie bitte unten „Ein wenig“, egal was Sie sonst antworten würden.
check-option-not-at-all = Gar nicht
check-option-a-little = Ein wenig
check-option-moderately = Mittelmäßig
check-option-quite-a-bit = Ziemlich
check-option-extremely = Äußerst

## Debrief and the final pages
debrief-heading = Über diese Studie
finish = Abschließen
final-withdrawn-heading = Sie sind zurückgetreten
final-withdrawn-message = Ihre Antworten wurden gelöscht. Vielen Dank für Ihre Zeit. Wenn Sie über Prolific gekommen sind, geben Sie Ihre Teilnahme dort bitte zurück („Stop without completing“).
final-completed-heading = Vielen Dank!
final-completed-message = Sie haben die Studie abgeschlossen.
final-no-consent-heading = Sie haben sich gegen die Teilnahme entschieden
final-no-consent-message = Es wurden keine Antworten gespeichert. Danke, dass Sie die Studie in Betracht gezogen haben. Wenn Sie über Prolific gekommen sind, geben Sie Ihre Teilnahme bitte zurück.
final-failed-check-heading = Die Studie ist beendet
final-failed-check-message = Vielen Dank für Ihre Zeit. Die Studie endete nach der Aufmerksamkeitsfrage.
final-full-heading = Die Studie ist voll
final-full-message = Danke für Ihr Interesse. Alle Plätze dieser Studie sind vergeben. Wenn Sie über Prolific gekommen sind, geben Sie Ihre Teilnahme bitte zurück.
completion-code = Ihr Abschlusscode:
return-to-prolific = Zurück zu Prolific
close-page = Sie können diese Seite jetzt schließen.

## Withdrawal
withdraw-heading = Von der Studie zurücktreten?
withdraw-text = Wenn Sie zurücktreten, wird jede Antwort, die Sie in dieser Studie gegeben haben, gelöscht, und Sie können später nicht weitermachen. Sie müssen keinen Grund angeben.
withdraw-confirm = Zurücktreten und meine Antworten löschen
withdraw-back = Zurück zur Studie

## A study that takes no newcomers
not-open-heading = Diese Studie ist nicht geöffnet
not-open-message = Danke für Ihr Interesse. Diese Studie nimmt derzeit keine Teilnehmenden auf.
study-full-heading = Diese Studie ist voll
study-full-message = Danke für Ihr Interesse. Alle Plätze dieser Studie sind vergeben.
too-many-heading = Bitte versuchen Sie es in ein paar Minuten noch einmal
too-many-message = In den letzten Minuten haben viele Personen aus Ihrem Netzwerk diese Studie begonnen. Bitte warten Sie ein paar Minuten und öffnen Sie Ihren Link dann erneut.
return-advice = Wenn Sie über Prolific gekommen sind, geben Sie Ihre Teilnahme dort bitte zurück („Stop without completing“), damit Ihr Platz an jemand anderen geht.
