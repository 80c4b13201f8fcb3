# Español. Our own translation of the interface (not a validated instrument translation).
language-name = Español
language-switcher = Idioma

## Every page
step-of = Paso { $step } de { $steps }
withdraw-link = Retirarse del estudio
continue = Continuar
choose = Elija…

## Consent
consent-heading = Información y consentimiento
pilot-notice-strong = Prueba piloto.
pilot-notice = Ha llegado mediante el enlace piloto del estudio: esta participación se marca como piloto y no cuenta en ningún sitio (ni en las plazas, ni en los totales, las exportaciones o el informe).
consent-agree = Acepto participar
consent-decline = No acepto

## Demographics
demographics-heading = Sobre usted
demographics-errors = Responda a todas las preguntas, por favor.
field-gender = Género
field-year_of_birth = Año de nacimiento
field-country = País de residencia
field-employment_status = Situación laboral
field-education = Nivel de estudios más alto completado
option-prefer-not-to-say = Prefiero no decirlo
option-female = Mujer
option-male = Hombre
option-non-binary-or-another-gender = No binario u otro género
option-employed = Empleado/a
option-self-employed = Autónomo/a
option-unemployed = Desempleado/a
option-student = Estudiante
option-retired = Jubilado/a
option-other = Otro
option-none = Ninguno
option-primary-school = Educación primaria
option-lower-secondary-school = Educación secundaria obligatoria
option-upper-secondary-school = Bachillerato
option-vocational-training = Formación profesional
option-university-bachelors = Universidad – Grado
option-university-masters = Universidad – Máster
option-university-doctorate = Universidad – Doctorado

## Questionnaires
panas-before-heading = ¿Cómo se siente ahora mismo?
panas-after-heading = ¿Cómo se siente al imaginarse en esa situación?
reminder-label = La situación:
reminder-whole = Leer de nuevo la situación completa
errors-heading = { $count ->
    [one] Responda al elemento que falta antes de continuar
   *[other] Responda a los { $count } elementos que faltan antes de continuar
}
error-prefix = Error:
error-choose = Elija una respuesta, por favor.
choose-one-statement = Elija una afirmación

## Situation
situation-heading = Imagine esta situación
situation-intro = Lea con atención la situación siguiente. Después imagine, con la mayor viveza posible, que usted es la persona que aparece en ella y que le está ocurriendo ahora. Tómese su tiempo.
situation-continue = Ya lo he imaginado – continuar
situation-wait = { $seconds ->
    [one] El botón estará disponible en un segundo.
   *[other] El botón estará disponible en { $seconds } segundos.
}
free-text-hint-optional = Opcional. Como máximo { $max } caracteres.
free-text-hint-required = Obligatorio. Como máximo { $max } caracteres.
free-text-missing = Escriba una respuesta antes de continuar.
free-text-too-long = Su respuesta tiene { $chars } caracteres; acórtela a { $max } caracteres como máximo. Su texto se conserva abajo.

## Attention check
check-heading = Una pregunta más
check-question = Las personas se fijan en cosas distintas en la vida cotidiana. Para mostrar que está leyendo esta pregunta con atención, elija «Un poco» a continuación, sea cual sea la respuesta que daría de otro modo.
check-option-not-at-all = Nada
check-option-a-little = Un poco
check-option-moderately = Moderadamente
check-option-quite-a-bit = Bastante
check-option-extremely = Extremadamente

## Debrief and the final pages
debrief-heading = Sobre este estudio
finish = Terminar
final-withdrawn-heading = Se ha retirado
final-withdrawn-message = Sus respuestas se han borrado. Gracias por su tiempo. Si llegó desde Prolific, devuelva allí su participación (elija «Stop without completing»).
final-completed-heading = ¡Gracias!
final-completed-message = Ha completado el estudio.
final-no-consent-heading = Ha decidido no participar
final-no-consent-message = No se ha guardado ninguna respuesta. Gracias por considerar el estudio. Si llegó desde Prolific, devuelva su participación.
final-failed-check-heading = El estudio ha terminado
final-failed-check-message = Gracias por su tiempo. El estudio terminó tras la pregunta de atención.
final-full-heading = El estudio está completo
final-full-message = Gracias por su interés. Todas las plazas de este estudio están ocupadas. Si llegó desde Prolific, devuelva su participación.
completion-code = Su código de finalización:
return-to-prolific = Volver a Prolific
close-page = Ya puede cerrar esta página.

## Withdrawal
withdraw-heading = ¿Retirarse del estudio?
withdraw-text = Si se retira, se borran todas las respuestas que haya dado en este estudio y no podrá continuar más tarde. No tiene que dar ningún motivo.
withdraw-confirm = Retirarme y borrar mis respuestas
withdraw-back = Volver al estudio

## A study that takes no newcomers
not-open-heading = Este estudio no está abierto
not-open-message = Gracias por su interés. Este estudio no admite participantes en este momento.
study-full-heading = Este estudio está completo
study-full-message = Gracias por su interés. Todas las plazas de este estudio están ocupadas.
too-many-heading = Inténtelo de nuevo dentro de unos minutos
too-many-message = En los últimos minutos muchas personas de su red han empezado este estudio. Espere unos minutos y vuelva a abrir su enlace.
return-advice = Si llegó desde Prolific, devuelva allí su participación (elija «Stop without completing») para que su plaza pase a otra persona.
