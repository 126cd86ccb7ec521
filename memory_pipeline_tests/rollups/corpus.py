"""64 short sessions of one user's life with an assistant: eight recurring topics, one specific detail."""

from memory_pipeline_tests.rollups.helpers import Session, session

TOPICS = [
    (
        "garden",
        "We worked on the vegetable garden together. The tomatoes and basil need watering every morning. "
        "I was happy the garden is growing well.",
    ),
    (
        "cooking",
        "We planned dinner recipes for the week. I cooked pasta with fresh garden vegetables. "
        "Cooking at home helps me relax after work.",
    ),
    (
        "running",
        "We reviewed my running training plan. I ran five kilometres this morning before work. "
        "Training for the autumn race keeps me motivated.",
    ),
    (
        "work",
        "We talked about my job and the project deadline at work. My manager asked for the report by Friday. "
        "Work has been stressful but I am managing.",
    ),
    (
        "piano",
        "We practised piano scales and a short Chopin piece. My piano teacher said my timing improved. "
        "Music practice makes me calm.",
    ),
    (
        "travel",
        "We planned the trip to Japan next spring. I want to see Kyoto temples and eat ramen in Tokyo. "
        "Travel planning makes me excited.",
    ),
    (
        "home",
        "We discussed renovating the kitchen at home. The new cabinets and paint colours are chosen. "
        "The home renovation is slow but rewarding.",
    ),
    (
        "dog",
        "We talked about my dog Biscuit and her daily walks. Biscuit loves the park near home. "
        "Caring for my dog makes me grateful.",
    ),
]
SPECIFIC = (
    "The vet found that Biscuit is allergic to chicken, so she now eats a salmon-based kibble "
    "and her itchy skin should clear up in three weeks."
)


def life_sessions() -> list[Session]:
    out = []
    for i in range(1, 65):
        topic, text = TOPICS[(i - 1) % len(TOPICS)]
        body = text
        if i == 40:  # a dog session with one detail nobody else mentions
            body = f"{TOPICS[7][1]} {SPECIFIC}"
        out.append(session(i, body, title=f"{topic} check-in {i}", tags=[topic]))
    return out
