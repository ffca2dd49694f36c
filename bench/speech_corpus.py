"""Sentences for espeak test speech (public-domain style prose), shared by tests and bench."""

from __future__ import annotations

EN_SENTENCES: list[str] = [
    "The quick brown fox jumps over the lazy dog.",
    "She sells sea shells by the sea shore every summer.",
    "Please call Stella and ask her to bring these things from the store.",
    "The train to the city leaves at seven in the morning.",
    "We walked along the river until the sun went down.",
    "My brother plays the piano better than anyone I know.",
    "The children built a small house out of wooden blocks.",
    "It was raining heavily when we arrived at the station.",
    "The old man told us a story about the mountains.",
    "Our team finished the project two days before the deadline.",
    "The library opens at nine and closes at five.",
    "A cup of hot tea is the best thing on a cold day.",
    "The doctor said that I should get more sleep.",
    "They planted tomatoes and beans in the garden last spring.",
    "The museum has a large collection of ancient coins.",
    "He forgot his umbrella on the bus again.",
    "The students listened carefully to the teacher.",
    "We need to buy bread, milk, and eggs for breakfast.",
    "The bridge was closed for repairs during the winter.",
    "She wrote a long letter to her friend in another country.",
]

# Kana only, spaces between words: espeak-ng reads no kanji.
JA_SENTENCES: list[str] = [
    "わたしの なまえは たなか です。",
    "まいにち でんしゃで かいしゃに いきます。",
    "ありがとう ございます。",
    "きょうは とても いい てんき です ね。",
    "あした ともだちと えいがを みに いきます。",
]

ES_SENTENCES: list[str] = [
    "Hola, me llamo Juan y vivo en Madrid con mi familia.",
    "Me gusta mucho leer libros y pasear por el parque los domingos.",
    "Mañana vamos a visitar a mis abuelos en el campo.",
]
