"""Regenerate the bundled mini-benchmark (images + mini.jsonl). Run from the repository root:

    python eval/data/mini/make_mini_data.py

Every place and fact is fictional and lives in the offline sample corpus (tools_env/data/sample_corpus.jsonl);
scene images are resized copies of the offline gallery (so image_search finds them) and text images are
rendered here (so crop + layout_parsing reveal the name to search for).
"""

import json
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

HERE = Path(__file__).parent
GALLERY = HERE.parents[2] / "tools_env" / "data" / "gallery"


def font(size):
    return ImageFont.load_default(size=size)


def gallery_copy(name, out):
    image = Image.open(GALLERY / name).convert("RGB")
    image.resize((image.width * 9 // 10, image.height * 9 // 10), Image.LANCZOS).save(HERE / out)


def street_scene(out):
    image = Image.new("RGB", (480, 320), (180, 200, 215))
    d = ImageDraw.Draw(image)
    d.rectangle([0, 230, 480, 320], fill=(90, 90, 95))
    d.rectangle([20, 80, 150, 230], fill=(170, 120, 90))
    d.rectangle([330, 60, 470, 230], fill=(200, 180, 150))
    d.rectangle([262, 110, 268, 230], fill=(60, 60, 60))
    d.rectangle([205, 80, 330, 112], fill=(20, 85, 45))
    d.text((213, 86), "MAPLE AVENUE", fill=(255, 255, 255), font=font(16))
    image.save(HERE / out)


def receipt(out):
    image = Image.new("RGB", (260, 360), (250, 250, 245))
    d = ImageDraw.Draw(image)
    lines = [
        ("HARBOR CAFE", 26),
        ("The Quay, Veldmark", 14),
        ("", 10),
        ("ESPRESSO      3.20", 18),
        ("CHEESE SCONE  2.80", 18),
        ("", 10),
        ("TOTAL         6.00", 20),
        ("THANK YOU", 16),
    ]
    y = 20
    for text, size in lines:
        d.text((20, y), text, fill=(20, 20, 20), font=font(size))
        y += size + 14
    image.save(HERE / out)


def chart(out):
    image = Image.new("RGB", (420, 300), (255, 255, 255))
    d = ImageDraw.Draw(image)
    d.text((20, 12), "VELDMARK FERRIES", fill=(0, 0, 0), font=font(22))
    d.text((20, 40), "passengers per quarter, 2023", fill=(60, 60, 60), font=font(14))
    for i, h in enumerate((60, 95, 140, 120)):
        x = 50 + i * 90
        d.rectangle([x, 270 - h, x + 50, 270], fill=(40, 110, 180))
        d.text((x + 12, 275), f"Q{i + 1}", fill=(0, 0, 0), font=font(14))
    image.save(HERE / out)


CASES = [
    (
        "mini-lighthouse",
        "lighthouse.png",
        "In what year was the lighthouse in this picture first lit?",
        ["1871"],
        "image_search identifies Kestrel Point Lighthouse; text_search gives the year",
    ),
    (
        "mini-clock",
        "clock_tower.png",
        "Which foundry built the clock of the tower in the image?",
        ["Halden foundry", "Halden"],
        "image_search -> Orrin Clock Tower -> text_search",
    ),
    (
        "mini-street-sign",
        "street.png",
        "In which year did the town council adopt the style of the street sign shown in the picture?",
        ["1964"],
        "crop the sign, layout_parsing reads MAPLE AVENUE, text_search the sign style",
    ),
    (
        "mini-receipt",
        "receipt.png",
        "In what year did the place that issued this receipt open?",
        ["1998"],
        "layout_parsing reads HARBOR CAFE; text_search gives the opening year",
    ),
    (
        "mini-chart",
        "chart.png",
        "How many passengers did the company named in this chart carry in its busiest quarter of that year?",
        ["140,000", "140000", "140 thousand"],
        "layout_parsing reads the company; text_search gives the figures",
    ),
    (
        "mini-bridge",
        "bridge.png",
        "How long is the arch span of the bridge in the image?",
        ["38 metres", "38 m", "38 meters"],
        "image_search -> Silverfen Bridge -> text_search",
    ),
    (
        "mini-mural",
        "mural.png",
        "Who painted the mural shown in this image?",
        ["Lio Marsh"],
        "image_search -> Blue Heron Mural -> visit the page",
    ),
    (
        "mini-peak",
        "peak.png",
        "Who made the first recorded ascent of the mountain in the image?",
        ["Ada Brenn"],
        "image_search -> Tallow Peak -> text_search",
    ),
]


def main():
    gallery_copy("kestrel_point_lighthouse.png", "lighthouse.png")
    gallery_copy("orrin_clock_tower.png", "clock_tower.png")
    gallery_copy("silverfen_bridge.png", "bridge.png")
    gallery_copy("blue_heron_mural.png", "mural.png")
    gallery_copy("tallow_peak.png", "peak.png")
    street_scene("street.png")
    receipt("receipt.png")
    chart("chart.png")
    with (HERE / "mini.jsonl").open("w") as fh:
        for case_id, image, question, answers, notes in CASES:
            fh.write(
                json.dumps(
                    {"id": case_id, "question": question, "image": image, "answers": answers, "notes": notes}
                )
                + "\n"
            )


if __name__ == "__main__":
    main()
